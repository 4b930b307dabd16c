"""A script cannot take the server's memory: each Lua VM is bounded, and a
script that needs more fails with an error while the server keeps serving."""

import pytest

from conftest import AGAINST_REDIS, running_server


@pytest.mark.skipif(AGAINST_REDIS, reason="Keel-specific: Redis's Lua VM has no memory bound")
def test_a_script_past_the_vm_bound_fails_and_the_server_serves_on():
    with running_server() as s:
        r = s.client()
        with pytest.raises(Exception) as e:
            r.eval("return #string.rep('x', 1100000000)", 0)
        assert "not enough memory" in str(e.value)
        with pytest.raises(Exception) as e:
            r.eval("local t = {} for i = 1, 3 do t[i] = string.rep('y', 400000000) end return #t", 0)
        assert "not enough memory" in str(e.value)
        # The VM is still usable, and so is the server.
        assert r.eval("return #string.rep('x', 1000)", 0) == 1000
        assert r.set("k", "v") and r.get("k") == "v"

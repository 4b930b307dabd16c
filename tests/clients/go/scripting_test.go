// Scripting as go-redis v9 users meet it, run unchanged against the server at
// KEEL_ADDR (host:port): Script.Run (EVALSHA, then EVAL on NOSCRIPT), the
// read-only variants, two rate limiters written the way applications write
// them, and FCALL after FUNCTION LOAD. The tests flush the server they are given.
package clienttests

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func connect(t *testing.T) (*redis.Client, context.Context) {
	t.Helper()
	addr := os.Getenv("KEEL_ADDR")
	if addr == "" {
		t.Skip("KEEL_ADDR (host:port of the server under test) is not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 32})
	t.Cleanup(func() { _ = c.Close() })
	must(t, c.FlushAll(ctx).Err())
	must(t, c.ScriptFlush(ctx).Err())
	must(t, c.FunctionFlush(ctx).Err())
	return c, ctx
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func wantErr(t *testing.T, err error, prefix string) {
	t.Helper()
	if err == nil {
		t.Fatalf("expected an error starting %q, got none", prefix)
	}
	if !strings.HasPrefix(err.Error(), prefix) {
		t.Fatalf("expected an error starting %q, got %q", prefix, err.Error())
	}
}

func int64s(t *testing.T, v interface{}) []int64 {
	t.Helper()
	items, ok := v.([]interface{})
	if !ok {
		t.Fatalf("expected an array reply, got %T %v", v, v)
	}
	out := make([]int64, len(items))
	for i, item := range items {
		n, ok := item.(int64)
		if !ok {
			t.Fatalf("element %d: expected an integer, got %T %v", i, item, item)
		}
		out[i] = n
	}
	return out
}

const incrBySrc = `return redis.call('INCRBY', KEYS[1], ARGV[1])`

func TestScriptRunFallsBackToEval(t *testing.T) {
	c, ctx := connect(t)
	script := redis.NewScript(incrBySrc)

	exists, err := script.Exists(ctx, c).Result()
	must(t, err)
	if len(exists) != 1 || exists[0] {
		t.Fatalf("SCRIPT EXISTS before any run: %v", exists)
	}
	// The cache is empty: EVALSHA answers NOSCRIPT and Run retries with EVAL,
	// which caches the script.
	n, err := script.Run(ctx, c, []string{"n"}, 5).Int64()
	must(t, err)
	if n != 5 {
		t.Fatalf("first Run: %d", n)
	}
	exists, err = script.Exists(ctx, c).Result()
	must(t, err)
	if !exists[0] {
		t.Fatal("EVAL did not cache the script")
	}
	// Now EVALSHA finds it.
	n, err = script.EvalSha(ctx, c, []string{"n"}, 2).Int64()
	must(t, err)
	if n != 7 {
		t.Fatalf("EvalSha: %d", n)
	}

	must(t, c.ScriptFlush(ctx).Err())
	wantErr(t, c.EvalSha(ctx, script.Hash(), []string{"n"}, 1).Err(), "NOSCRIPT")
	n, err = script.Run(ctx, c, []string{"n"}, 3).Int64()
	must(t, err)
	if n != 10 {
		t.Fatalf("Run after SCRIPT FLUSH: %d", n)
	}

	// SCRIPT LOAD returns the same SHA1 the client computed.
	must(t, c.ScriptFlush(ctx).Err())
	sha, err := script.Load(ctx, c).Result()
	must(t, err)
	if sha != script.Hash() {
		t.Fatalf("SCRIPT LOAD returned %s, the client computed %s", sha, script.Hash())
	}
}

func TestScriptReplyConversions(t *testing.T) {
	c, ctx := connect(t)
	script := redis.NewScript(`
		return {KEYS[1], ARGV[1], 42, 3.99, {1, 'two'}, redis.status_reply('FINE'), false}`)
	v, err := script.Run(ctx, c, []string{"key"}, "arg").Slice()
	must(t, err)
	want := []interface{}{"key", "arg", int64(42), int64(3), []interface{}{int64(1), "two"}, "FINE", nil}
	if len(v) != len(want) {
		t.Fatalf("reply %#v", v)
	}
	for i := range want {
		if !equalReply(v[i], want[i]) {
			t.Fatalf("element %d: got %#v want %#v", i, v[i], want[i])
		}
	}

	failing := redis.NewScript(`return redis.error_reply('MYERR went wrong')`)
	wantErr(t, failing.Run(ctx, c, nil).Err(), "MYERR went wrong")

	must(t, c.Set(ctx, "s", "v", 0).Err())
	wrongType := redis.NewScript(`return redis.call('LPUSH', KEYS[1], 'x')`)
	wantErr(t, wrongType.Run(ctx, c, []string{"s"}).Err(), "WRONGTYPE")
	// pcall hands the error to the script as a table instead.
	caught := redis.NewScript(`
		local ok = redis.pcall('LPUSH', KEYS[1], 'x')
		return ok['err']`)
	s, err := caught.Run(ctx, c, []string{"s"}).Text()
	must(t, err)
	if !strings.HasPrefix(s, "WRONGTYPE") {
		t.Fatalf("pcall error text: %q", s)
	}
}

func equalReply(got, want interface{}) bool {
	gs, gok := got.([]interface{})
	ws, wok := want.([]interface{})
	if gok || wok {
		if !gok || !wok || len(gs) != len(ws) {
			return false
		}
		for i := range ws {
			if !equalReply(gs[i], ws[i]) {
				return false
			}
		}
		return true
	}
	return got == want
}

func TestReadOnlyScripts(t *testing.T) {
	c, ctx := connect(t)
	must(t, c.Set(ctx, "greeting", "hello", 0).Err())
	get := redis.NewScript(`return redis.call('GET', KEYS[1])`)

	v, err := get.EvalRO(ctx, c, []string{"greeting"}).Text()
	must(t, err)
	if v != "hello" {
		t.Fatalf("EVAL_RO: %q", v)
	}
	v, err = get.EvalShaRO(ctx, c, []string{"greeting"}).Text()
	must(t, err)
	if v != "hello" {
		t.Fatalf("EVALSHA_RO after EVAL_RO cached it: %q", v)
	}
	must(t, c.ScriptFlush(ctx).Err())
	wantErr(t, get.EvalShaRO(ctx, c, []string{"greeting"}).Err(), "NOSCRIPT")
	v, err = get.RunRO(ctx, c, []string{"greeting"}).Text()
	must(t, err)
	if v != "hello" {
		t.Fatalf("RunRO: %q", v)
	}
	v, err = c.EvalShaRO(ctx, get.Hash(), []string{"greeting"}).Text()
	must(t, err)
	if v != "hello" {
		t.Fatalf("EVALSHA_RO by hash: %q", v)
	}

	set := redis.NewScript(`return redis.call('SET', KEYS[1], 'changed')`)
	wantErr(t, set.EvalRO(ctx, c, []string{"greeting"}).Err(),
		"ERR Write commands are not allowed from read-only scripts.")
	wantErr(t, set.RunRO(ctx, c, []string{"greeting"}).Err(),
		"ERR Write commands are not allowed from read-only scripts.")
	v, err = c.Get(ctx, "greeting").Result()
	must(t, err)
	if v != "hello" {
		t.Fatalf("a read-only script wrote: %q", v)
	}
}

// A fixed window: the first hit in a window starts its expiry.
const fixedWindowSrc = `
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
local allowed = 0
if hits <= tonumber(ARGV[1]) then
  allowed = 1
end
return {allowed, hits, redis.call('PTTL', KEYS[1])}`

func TestFixedWindowRateLimiter(t *testing.T) {
	c, ctx := connect(t)
	limiter := redis.NewScript(fixedWindowSrc)
	const limit, workers, perWorker = 50, 16, 10

	var mu sync.Mutex
	allowed, seen := 0, map[int64]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				v, err := limiter.Run(ctx, c, []string{"rl:api"}, limit, 60000).Slice()
				if err != nil {
					errs <- err
					return
				}
				ok, hits, ttl := v[0].(int64), v[1].(int64), v[2].(int64)
				if ttl <= 0 || ttl > 60000 {
					errs <- errors.New("window TTL out of range")
					return
				}
				mu.Lock()
				allowed += int(ok)
				if seen[hits] {
					errs <- errors.New("two calls saw the same hit count")
				}
				seen[hits] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if allowed != limit {
		t.Fatalf("allowed %d calls, the limit is %d", allowed, limit)
	}
	if n, _ := c.Get(ctx, "rl:api").Int(); n != workers*perWorker {
		t.Fatalf("hit counter %d", n)
	}

	// A short window opens again once it expires.
	for i := 1; i <= 3; i++ {
		v := int64s(t, limiter.Run(ctx, c, []string{"rl:short"}, 2, 150).Val())
		if want := int64(0); i <= 2 {
			want = 1
			if v[0] != want {
				t.Fatalf("hit %d in the window: %v", i, v)
			}
		} else if v[0] != want {
			t.Fatalf("hit %d past the limit: %v", i, v)
		}
	}
	time.Sleep(300 * time.Millisecond)
	v := int64s(t, limiter.Run(ctx, c, []string{"rl:short"}, 2, 150).Val())
	if v[0] != 1 || v[1] != 1 {
		t.Fatalf("first hit of a new window: %v", v)
	}
}

// A token bucket refilled by elapsed time; the caller passes the clock, so
// the test is exact. Fractional token counts are stored as Lua formats them.
const tokenBucketSrc = `
local capacity = tonumber(ARGV[1])
local per_second = tonumber(ARGV[2])
local now_ms = tonumber(ARGV[3])
local want = tonumber(ARGV[4])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1]) or capacity
local ts = tonumber(state[2]) or now_ms
if now_ms > ts then
  tokens = math.min(capacity, tokens + (now_ms - ts) * per_second / 1000)
  ts = now_ms
end
local allowed = 0
if tokens >= want then
  tokens = tokens - want
  allowed = 1
end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', ts)
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / per_second * 1000))
return {allowed, math.floor(tokens)}`

func TestTokenBucketRateLimiter(t *testing.T) {
	c, ctx := connect(t)
	bucket := redis.NewScript(tokenBucketSrc)
	take := func(nowMs int64) []int64 {
		t.Helper()
		return int64s(t, bucket.Run(ctx, c, []string{"tb:user"}, 5, 2, nowMs, 1).Val())
	}
	start := int64(1_700_000_000_000)
	for i := 0; i < 5; i++ {
		if v := take(start); v[0] != 1 || v[1] != int64(4-i) {
			t.Fatalf("take %d from a full bucket: %v", i, v)
		}
	}
	if v := take(start); v[0] != 0 {
		t.Fatalf("an empty bucket allowed a call: %v", v)
	}
	// 250 ms at 2 tokens a second refill half a token: still not enough.
	if v := take(start + 250); v[0] != 0 || v[1] != 0 {
		t.Fatalf("half a token: %v", v)
	}
	tokens, err := c.HGet(ctx, "tb:user", "tokens").Result()
	must(t, err)
	if tokens != "0.5" {
		t.Fatalf("a Lua number 0.5 passed to HSET was stored as %q", tokens)
	}
	if v := take(start + 500); v[0] != 1 || v[1] != 0 {
		t.Fatalf("one token after 500 ms: %v", v)
	}
	// A long pause refills only up to the capacity.
	if v := take(start + 60_000); v[0] != 1 || v[1] != 4 {
		t.Fatalf("after a long pause: %v", v)
	}
	ttl, err := c.PTTL(ctx, "tb:user").Result()
	must(t, err)
	if ttl <= 0 || ttl > 2500*time.Millisecond {
		t.Fatalf("bucket TTL %v", ttl)
	}
}

const libraryName = "keelclients"

const librarySrc = `#!lua name=keelclients
local function incr_by(keys, args)
  return redis.call('INCRBY', keys[1], args[1])
end
local function read(keys, args)
  return redis.call('GET', keys[1])
end
redis.register_function('kc_incrby', incr_by)
redis.register_function{function_name='kc_get', callback=read, flags={'no-writes'}}
`

func TestFunctionLoadAndFcall(t *testing.T) {
	c, ctx := connect(t)
	name, err := c.FunctionLoad(ctx, librarySrc).Result()
	must(t, err)
	if name != libraryName {
		t.Fatalf("FUNCTION LOAD returned %q", name)
	}
	wantErr(t, c.FunctionLoad(ctx, librarySrc).Err(), "ERR Library 'keelclients' already exists")
	name, err = c.FunctionLoadReplace(ctx, librarySrc).Result()
	must(t, err)
	if name != libraryName {
		t.Fatalf("FUNCTION LOAD REPLACE returned %q", name)
	}

	n, err := c.FCall(ctx, "kc_incrby", []string{"counter"}, 7).Int64()
	must(t, err)
	if n != 7 {
		t.Fatalf("FCALL kc_incrby: %d", n)
	}
	n, err = c.FCall(ctx, "kc_incrby", []string{"counter"}, 3).Int64()
	must(t, err)
	if n != 10 {
		t.Fatalf("second FCALL kc_incrby: %d", n)
	}
	v, err := c.FCallRO(ctx, "kc_get", []string{"counter"}).Text()
	must(t, err)
	if v != "10" {
		t.Fatalf("FCALL_RO kc_get: %q", v)
	}
	wantErr(t, c.FCallRO(ctx, "kc_incrby", []string{"counter"}, 1).Err(),
		"ERR Can not execute a script with write flag using *_ro command.")
	wantErr(t, c.FCall(ctx, "kc_missing", nil).Err(), "ERR Function not found")

	libs, err := c.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: "keel*", WithCode: true}).Result()
	must(t, err)
	if len(libs) != 1 || libs[0].Name != libraryName || libs[0].Engine != "LUA" || libs[0].Code != librarySrc {
		t.Fatalf("FUNCTION LIST: %+v", libs)
	}
	flags := map[string][]string{}
	for _, f := range libs[0].Functions {
		flags[f.Name] = f.Flags
	}
	if len(flags) != 2 || len(flags["kc_incrby"]) != 0 || len(flags["kc_get"]) != 1 || flags["kc_get"][0] != "no-writes" {
		t.Fatalf("FUNCTION LIST functions: %+v", libs[0].Functions)
	}

	must(t, c.FunctionDelete(ctx, libraryName).Err())
	wantErr(t, c.FCall(ctx, "kc_incrby", []string{"counter"}, 1).Err(), "ERR Function not found")
}

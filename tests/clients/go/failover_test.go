// go-redis's FailoverClient across a Sentinel failover, as a Go service
// meets one: writes WAITed for a replica, then the master is killed (the
// test is given its pid); the client must find the promoted replica through
// the Sentinels, write again, and read back every WAITed write. Run by
// tests/python/test_sentinel.py, which starts the nodes and the Sentinels.
package clienttests

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestFailoverClientAcrossAFailover(t *testing.T) {
	sentinels := os.Getenv("KEEL_SENTINELS")
	pid, err := strconv.Atoi(os.Getenv("KEEL_MASTER_PID"))
	if sentinels == "" || err != nil {
		t.Skip("KEEL_SENTINELS and KEEL_MASTER_PID are set by test_sentinel.py")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    "mymaster",
		SentinelAddrs: strings.Split(sentinels, ","),
		DialTimeout:   time.Second,
		ReadTimeout:   2 * time.Second,
		MaxRetries:    -1,
	})
	defer c.Close()
	const n = 100
	for i := 0; i < n; i++ {
		must(t, c.Set(ctx, fmt.Sprintf("go:%d", i), i, 0).Err())
		acked, err := c.Do(ctx, "WAIT", 1, 0).Int()
		must(t, err)
		if acked < 1 {
			t.Fatalf("WAIT 1 0 returned %d", acked)
		}
	}
	must(t, syscall.Kill(pid, syscall.SIGKILL))
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := c.Set(ctx, "go:after", "1", 0).Err()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write succeeded after the failover: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for i := 0; i < n; i++ {
		got, err := c.Get(ctx, fmt.Sprintf("go:%d", i)).Result()
		must(t, err)
		if got != strconv.Itoa(i) {
			t.Fatalf("go:%d is %q after the failover", i, got)
		}
	}
}

// Consumer groups as go-redis v9 users meet them, against the server at
// KEEL_ADDR: XGroupCreateMkStream, XReadGroup (with `>` and a blocking read
// woken by XAdd from another connection), XPending and XPendingExt, XAck,
// XClaim, XAutoClaim and XInfoGroups/XInfoConsumers parse what the server
// sends.
package clienttests

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestStreamGroupsReadAckClaim(t *testing.T) {
	c, ctx := connect(t)

	must(t, c.XGroupCreateMkStream(ctx, "orders", "workers", "$").Err())
	for _, v := range []string{"a", "b", "c"} {
		must(t, c.XAdd(ctx, &redis.XAddArgs{Stream: "orders", Values: map[string]any{"item": v}}).Err())
	}
	streams, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: "workers", Consumer: "alice", Streams: []string{"orders", ">"}, Count: 2,
	}).Result()
	must(t, err)
	if len(streams) != 1 || streams[0].Stream != "orders" || len(streams[0].Messages) != 2 {
		t.Fatalf("XReadGroup: %#v", streams)
	}
	first := streams[0].Messages[0]
	if first.Values["item"] != "a" {
		t.Fatalf("first message: %#v", first)
	}

	sum, err := c.XPending(ctx, "orders", "workers").Result()
	must(t, err)
	if sum.Count != 2 || sum.Lower != first.ID || sum.Consumers["alice"] != 2 {
		t.Fatalf("XPending: %#v", sum)
	}
	n, err := c.XAck(ctx, "orders", "workers", first.ID).Result()
	must(t, err)
	if n != 1 {
		t.Fatalf("XAck acknowledged %d, want 1", n)
	}

	second := streams[0].Messages[1]
	claimed, err := c.XClaim(ctx, &redis.XClaimArgs{
		Stream: "orders", Group: "workers", Consumer: "bob", MinIdle: 0, Messages: []string{second.ID},
	}).Result()
	must(t, err)
	if len(claimed) != 1 || claimed[0].ID != second.ID || claimed[0].Values["item"] != "b" {
		t.Fatalf("XClaim: %#v", claimed)
	}
	ext, err := c.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: "orders", Group: "workers", Start: "-", End: "+", Count: 10,
	}).Result()
	must(t, err)
	if len(ext) != 1 || ext[0].Consumer != "bob" || ext[0].RetryCount != 2 {
		t.Fatalf("XPendingExt: %#v", ext)
	}

	// The third entry goes to carol, then XAutoClaim hands everything to dave.
	_, err = c.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: "workers", Consumer: "carol", Streams: []string{"orders", ">"},
	}).Result()
	must(t, err)
	msgs, next, err := c.XAutoClaim(ctx, &redis.XAutoClaimArgs{
		Stream: "orders", Group: "workers", Consumer: "dave", MinIdle: 0, Start: "0", Count: 10,
	}).Result()
	must(t, err)
	if len(msgs) != 2 || next != "0-0" {
		t.Fatalf("XAutoClaim: %#v next %q", msgs, next)
	}

	groups, err := c.XInfoGroups(ctx, "orders").Result()
	must(t, err)
	if len(groups) != 1 || groups[0].Name != "workers" || groups[0].Pending != 2 || groups[0].Lag != 0 {
		t.Fatalf("XInfoGroups: %#v", groups)
	}
	consumers, err := c.XInfoConsumers(ctx, "orders", "workers").Result()
	must(t, err)
	if len(consumers) != 4 || consumers[3].Name != "dave" || consumers[3].Pending != 2 {
		t.Fatalf("XInfoConsumers: %#v", consumers)
	}
}

func TestStreamGroupsBlockingRead(t *testing.T) {
	c, ctx := connect(t)
	must(t, c.XGroupCreateMkStream(ctx, "jobs", "g", "$").Err())

	got := make(chan []redis.XStream, 1)
	fail := make(chan error, 1)
	go func() {
		s, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: "g", Consumer: "w", Streams: []string{"jobs", ">"}, Block: 5 * time.Second,
		}).Result()
		if err != nil {
			fail <- err
			return
		}
		got <- s
	}()
	// Wait until the reader is blocked before adding.
	deadline := time.Now().Add(5 * time.Second)
	for {
		list, err := c.ClientList(ctx).Result()
		must(t, err)
		if containsCmd(list, "cmd=xreadgroup") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the reader never blocked")
		}
		time.Sleep(10 * time.Millisecond)
	}
	id, err := c.XAdd(ctx, &redis.XAddArgs{Stream: "jobs", Values: []string{"job", "1"}}).Result()
	must(t, err)
	select {
	case s := <-got:
		if len(s) != 1 || len(s[0].Messages) != 1 || s[0].Messages[0].ID != id {
			t.Fatalf("woken XReadGroup: %#v", s)
		}
	case err := <-fail:
		t.Fatalf("XReadGroup: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the blocked XReadGroup was not woken")
	}
	// With nothing new, a short block ends in redis.Nil.
	_, err = c.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: "g", Consumer: "w", Streams: []string{"jobs", ">"}, Block: 20 * time.Millisecond,
	}).Result()
	if err != redis.Nil {
		t.Fatalf("timed-out XReadGroup: %v, want redis.Nil", err)
	}
}

func containsCmd(list, what string) bool {
	for i := 0; i+len(what) <= len(list); i++ {
		if list[i:i+len(what)] == what {
			return true
		}
	}
	return false
}

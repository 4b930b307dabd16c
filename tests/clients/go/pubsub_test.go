// Pub/sub as go-redis v9 users meet it, against the server at KEEL_ADDR:
// Subscribe and PSubscribe return a PubSub whose Receive waits for the
// confirmation, Channel() delivers *redis.Message values (Pattern set for
// pattern matches), Publish reports how many received, and Unsubscribe and
// Close end the subscription.
package clienttests

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func receiveWithin(t *testing.T, ch <-chan *redis.Message, d time.Duration) *redis.Message {
	t.Helper()
	select {
	case m, ok := <-ch:
		if !ok {
			t.Fatal("the message channel closed")
		}
		return m
	case <-time.After(d):
		t.Fatal("no message within", d)
	}
	return nil
}

func TestPubSubSubscribeAndPSubscribe(t *testing.T) {
	c, ctx := connect(t)

	sub := c.Subscribe(ctx, "gonews", "goother")
	defer sub.Close()
	// Receive returns the first confirmation; go-redis tracks the rest itself.
	first, err := sub.Receive(ctx)
	must(t, err)
	s, ok := first.(*redis.Subscription)
	if !ok || s.Kind != "subscribe" || s.Channel != "gonews" || s.Count != 1 {
		t.Fatalf("first confirmation: %#v", first)
	}
	psub := c.PSubscribe(ctx, "gon*")
	defer psub.Close()
	pfirst, err := psub.Receive(ctx)
	must(t, err)
	if ps, ok := pfirst.(*redis.Subscription); !ok || ps.Kind != "psubscribe" || ps.Channel != "gon*" {
		t.Fatalf("pattern confirmation: %#v", pfirst)
	}

	msgs := sub.Channel()
	pmsgs := psub.Channel()
	n, err := c.Publish(ctx, "gonews", "hello").Result()
	must(t, err)
	if n != 2 {
		t.Fatalf("PUBLISH gonews reached %d, want 2", n)
	}
	m := receiveWithin(t, msgs, 5*time.Second)
	if m.Channel != "gonews" || m.Payload != "hello" || m.Pattern != "" {
		t.Fatalf("channel message: %#v", m)
	}
	pm := receiveWithin(t, pmsgs, 5*time.Second)
	if pm.Channel != "gonews" || pm.Payload != "hello" || pm.Pattern != "gon*" {
		t.Fatalf("pattern message: %#v", pm)
	}

	// The pattern does not match goother: only the channel subscriber hears it.
	n, err = c.Publish(ctx, "goother", "second").Result()
	must(t, err)
	if n != 1 {
		t.Fatalf("PUBLISH goother reached %d, want 1", n)
	}
	m = receiveWithin(t, msgs, 5*time.Second)
	if m.Channel != "goother" || m.Payload != "second" {
		t.Fatalf("second message: %#v", m)
	}

	chans, err := c.PubSubChannels(ctx, "go*").Result()
	must(t, err)
	sort.Strings(chans)
	if fmt.Sprint(chans) != "[gonews goother]" {
		t.Fatalf("PUBSUB CHANNELS go*: %v", chans)
	}
	numsub, err := c.PubSubNumSub(ctx, "gonews", "nobody").Result()
	must(t, err)
	if numsub["gonews"] != 1 || numsub["nobody"] != 0 {
		t.Fatalf("PUBSUB NUMSUB: %v", numsub)
	}
	numpat, err := c.PubSubNumPat(ctx).Result()
	must(t, err)
	if numpat != 1 {
		t.Fatalf("PUBSUB NUMPAT: %d", numpat)
	}

	must(t, sub.Unsubscribe(ctx, "gonews"))
	must(t, psub.PUnsubscribe(ctx))
	// The unsubscriptions are confirmed asynchronously: wait for the counts.
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err = c.Publish(ctx, "gonews", "late").Result()
		must(t, err)
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("PUBLISH after unsubscribing still reached %d", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	n, err = c.Publish(ctx, "goother", "still").Result()
	must(t, err)
	if n != 1 {
		t.Fatalf("goother after unsubscribing gonews reached %d, want 1", n)
	}
	// Messages published while the unsubscription was under way may come first.
	for m = receiveWithin(t, msgs, 5*time.Second); m.Payload == "late"; {
		m = receiveWithin(t, msgs, 5*time.Second)
	}
	if m.Channel != "goother" || m.Payload != "still" {
		t.Fatalf("message after unsubscribing: %#v", m)
	}
}

// Several goroutines publish numbered messages at once over the client's
// pool; one subscriber sees each publisher's numbers in order, none lost.
func TestPubSubOrderPerPublisher(t *testing.T) {
	c, ctx := connect(t)
	const publishers, per = 8, 200

	sub := c.Subscribe(ctx, "goorder")
	defer sub.Close()
	_, err := sub.Receive(ctx)
	must(t, err)
	msgs := sub.Channel(redis.WithChannelSize(publishers * per))

	errs := make(chan error, publishers)
	for p := 0; p < publishers; p++ {
		go func(p int) {
			for i := 0; i < per; i++ {
				if err := c.Publish(ctx, "goorder", fmt.Sprintf("%d:%d", p, i)).Err(); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}(p)
	}
	for p := 0; p < publishers; p++ {
		must(t, <-errs)
	}
	last := make([]int, publishers)
	for i := range last {
		last[i] = -1
	}
	for k := 0; k < publishers*per; k++ {
		m := receiveWithin(t, msgs, 10*time.Second)
		var p, i int
		if _, err := fmt.Sscanf(m.Payload, "%d:%d", &p, &i); err != nil || p < 0 || p >= publishers {
			t.Fatalf("unexpected payload %q", m.Payload)
		}
		if i != last[p]+1 {
			t.Fatalf("publisher %d: got %d after %d", p, i, last[p])
		}
		last[p] = i
	}
}

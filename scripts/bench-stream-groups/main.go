// Load for consumer groups: C connections, each a consumer of group g on
// stream s, loop on P pipelined `XREADGROUP GROUP g cN COUNT 1 STREAMS s >`
// followed by P pipelined `XACK s g <id>` for the ids just read, until the
// stream has nothing new. redis-benchmark cannot chain an id from one reply
// into the next command, hence this program (standard library only).
//
//	go run ./scripts/bench-stream-groups -addr 127.0.0.1:6379 -c 8 -P 16
//
// Prints: requests (XREADGROUP + XACK), seconds, requests per second.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

func cmd(w *bufio.Writer, args ...string) {
	fmt.Fprintf(w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(w, "$%d\r\n%s\r\n", len(a), a)
	}
}

// reply reads one RESP2 reply; it returns the first bulk string found in it
// at depth 4 (the id of XREADGROUP's first entry), or "" for none.
func reply(r *bufio.Reader, depth int, id *string) error {
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	line = line[:len(line)-2]
	switch line[0] {
	case '+', ':':
		return nil
	case '-':
		return fmt.Errorf("server error: %s", line[1:])
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io(r, buf); err != nil {
			return err
		}
		if depth == 4 && *id == "" {
			*id = string(buf[:n])
		}
		return nil
	case '*':
		n, _ := strconv.Atoi(line[1:])
		for i := 0; i < n; i++ {
			if err := reply(r, depth+1, id); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unexpected reply %q", line)
}

func io(r *bufio.Reader, buf []byte) (int, error) {
	got := 0
	for got < len(buf) {
		n, err := r.Read(buf[got:])
		got += n
		if err != nil {
			return got, err
		}
	}
	return got, nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server")
	conns := flag.Int("c", 8, "connections (one consumer each)")
	pipe := flag.Int("P", 1, "pipeline depth")
	flag.Parse()
	var requests atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < *conns; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			conn, err := net.Dial("tcp", *addr)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			defer conn.Close()
			r := bufio.NewReaderSize(conn, 1<<16)
			w := bufio.NewWriterSize(conn, 1<<16)
			consumer := "c" + strconv.Itoa(c)
			ids := make([]string, 0, *pipe)
			for {
				for i := 0; i < *pipe; i++ {
					cmd(w, "XREADGROUP", "GROUP", "g", consumer, "COUNT", "1", "STREAMS", "s", ">")
				}
				if err := w.Flush(); err != nil {
					panic(err)
				}
				ids = ids[:0]
				for i := 0; i < *pipe; i++ {
					id := ""
					if err := reply(r, 0, &id); err != nil {
						panic(err)
					}
					if id != "" {
						ids = append(ids, id)
					}
				}
				requests.Add(int64(*pipe))
				if len(ids) == 0 {
					return
				}
				for _, id := range ids {
					cmd(w, "XACK", "s", "g", id)
				}
				if err := w.Flush(); err != nil {
					panic(err)
				}
				for range ids {
					var none string
					if err := reply(r, 0, &none); err != nil {
						panic(err)
					}
				}
				requests.Add(int64(len(ids)))
			}
		}(c)
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	n := requests.Load()
	fmt.Printf("requests=%d seconds=%.3f rps=%.0f\n", n, secs, float64(n)/secs)
}

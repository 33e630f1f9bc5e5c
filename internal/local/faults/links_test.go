package faults

import (
	"bufio"
	"context"
	"errors"
	"net"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/citycells/compute/internal/planes"
)

// echoServer answers every line with the same line, like a tiny apiserver.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// startProxy serves one link of DFW in front of target.
func startProxy(t *testing.T, target string) (*Proxy, *Client, string) {
	t.Helper()
	ports, err := planes.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	lp, err := NewProxy([]LinkRecord{{Name: "hub→cell-dfw", City: "DFW", Port: ports[0], Target: target}}, loopback(ports[1]))
	if err != nil {
		t.Fatal(err)
	}
	lp.Serve()
	t.Cleanup(lp.Close)
	fc, err := NewClient(lp.ControlURL())
	if err != nil {
		t.Fatal(err)
	}
	return lp, fc, loopback(ports[0])
}

// roundTrip sends a line through addr and reads the echo within d.
func roundTrip(addr string, d time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, d)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "ping" {
		return &net.AddrError{Err: "unexpected answer " + line, Addr: addr}
	}
	return nil
}

func TestLinkProxyCutsAndHealsACity(t *testing.T) {
	_, fc, addr := startProxy(t, echoServer(t))
	ctx := context.Background()
	if err := roundTrip(addr, 2*time.Second); err != nil {
		t.Fatalf("a connected link must forward: %v", err)
	}

	// A connection open when the partition begins is cut.
	open, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = open.Close() }()
	// One exchange first, so the connection is forwarded, not just queued.
	_ = open.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := open.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(open).ReadString('\n'); err != nil {
		t.Fatalf("an open connection must forward before the partition: %v", err)
	}
	if _, err := fc.Partition(ctx, "DFW", 0, PartitionHang); err != nil {
		t.Fatal(err)
	}
	_ = open.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := open.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("an open connection must be cut by the partition, got %v", err)
	}
	// New connections hang: accepted, never answered.
	if err := roundTrip(addr, 300*time.Millisecond); !isTimeout(err) {
		t.Fatalf("a partitioned link must hang, got %v", err)
	}
	parts, err := fc.Partitions(ctx)
	if err != nil || len(parts) != 1 || parts[0].City != "DFW" || parts[0].Mode != PartitionHang {
		t.Fatalf("Partitions() = %+v, %v; want DFW hanging", parts, err)
	}

	was, err := fc.Heal(ctx, "DFW")
	if err != nil || !was {
		t.Fatalf("Heal() = %v, %v; want true", was, err)
	}
	if err := roundTrip(addr, 2*time.Second); err != nil {
		t.Fatalf("a healed link must forward again: %v", err)
	}
	if parts, _ := fc.Partitions(ctx); len(parts) != 0 {
		t.Fatalf("no partition must be left after heal, got %+v", parts)
	}
}

func TestLinkProxyDropRefusesAndATimedPartitionHealsItself(t *testing.T) {
	_, fc, addr := startProxy(t, echoServer(t))
	ctx := context.Background()
	rec, err := fc.Partition(ctx, "dfw", 2*time.Second, PartitionDrop)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Until.IsZero() {
		t.Fatal("a timed partition must say when it heals")
	}
	if err := roundTrip(addr, time.Second); err == nil || isTimeout(err) {
		t.Fatalf("a dropping link must close connections at once, got %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for roundTrip(addr, time.Second) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the timed partition did not heal by itself")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestLinkProxyRejectsUnknownCitiesAndModes(t *testing.T) {
	_, fc, _ := startProxy(t, echoServer(t))
	ctx := context.Background()
	if _, err := fc.Partition(ctx, "LHR", 0, PartitionHang); err == nil || !strings.Contains(err.Error(), "DFW") {
		t.Fatalf("partitioning an unknown city must fail naming the cities, got %v", err)
	}
	if _, err := fc.Partition(ctx, "DFW", 0, "sideways"); err == nil {
		t.Fatal("an unknown mode must fail")
	}
	if _, err := fc.Heal(ctx, "LHR"); err == nil {
		t.Fatal("healing an unknown city must fail")
	}
}

func TestALinkWithFallbacksReachesTheFirstTargetThatAnswers(t *testing.T) {
	ports, err := planes.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	// ports[2] is free: nothing listens there, like a replica that died.
	l := LinkRecord{Name: "webhook→compute-manager-project-default", Port: ports[0], Target: loopback(ports[2]), Fallbacks: []string{echoServer(t)}}
	lp, err := NewProxy([]LinkRecord{l}, loopback(ports[1]))
	if err != nil {
		t.Fatal(err)
	}
	lp.Serve()
	t.Cleanup(lp.Close)
	c, err := net.DialTimeout("tcp", loopback(ports[0]), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("admit?\n")); err != nil {
		t.Fatal(err)
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || got != "admit?\n" {
		t.Fatalf("through the link = %q, %v; want the fallback's echo", got, err)
	}
	if cities := lp.cities(); len(cities) != 0 {
		t.Fatalf("a link without a city makes cities %v partitionable", cities)
	}
}

// isTimeout reports a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func FuzzParseLinkArg(f *testing.F) {
	for _, seed := range []string{
		"hub→cell-dfw,DFW,4000,127.0.0.1:6443", "a,DFW,0,x:1", "a,dfw,1,x:1", ",,,", "a,DFW,70000,127.0.0.1:1", "a,DFW,1,nohost",
		"webhook→compute-manager-project-default,,4001,127.0.0.1:9443,127.0.0.1:9444", "a,,1,x:1,", "a,DFW,1,x:1,y",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLinkArg(s)
		if err != nil {
			return
		}
		again, err := ParseLinkArg(LinkArg(l))
		if err != nil || !reflect.DeepEqual(again, l) {
			t.Fatalf("a parsed link must survive rendering: %q → %+v → %+v, %v", s, l, again, err)
		}
		if l.Port <= 0 || l.Port > 65535 || (l.City != "" && !cityCode.MatchString(l.City)) {
			t.Fatalf("ParseLinkArg(%q) accepted %+v", s, l)
		}
	})
}

// loopback renders a loopback address.
func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

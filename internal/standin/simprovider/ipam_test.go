package simprovider

import (
	"errors"
	"net/netip"
	"testing"
)

func TestAllocator(t *testing.T) {
	a, err := newAllocator("10.1.0.0/29") // .2 to .6 usable
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, owner := range []string{"a", "b", "c", "d", "e"} {
		addr, err := a.assign(owner, netip.Addr{})
		if err != nil {
			t.Fatalf("assign %s: %v", owner, err)
		}
		got[owner] = addr.String()
	}
	if got["a"] != "10.1.0.2" || got["e"] != "10.1.0.6" {
		t.Errorf("addresses %v, want .2 to .6", got)
	}
	if again, _ := a.assign("a", netip.Addr{}); again.String() != "10.1.0.2" {
		t.Errorf("assign is not stable for an owner: %s", again)
	}
	if _, err := a.assign("f", netip.Addr{}); !errors.Is(err, errExhausted) {
		t.Errorf("a full range gave %v, want errExhausted", err)
	}
	a.release("c")
	if addr, err := a.assign("f", netip.Addr{}); err != nil || addr.String() != "10.1.0.4" {
		t.Errorf("a released address is not reused: %s %v", addr, err)
	}
}

func TestAllocatorKeepsObservedAddresses(t *testing.T) {
	a, err := newAllocator("10.2.0.0/24")
	if err != nil {
		t.Fatal(err)
	}
	a.observe("ns/web-0#0", netip.MustParseAddr("10.2.0.2"))
	a.observe("ns/web-1#0", netip.MustParseAddr("10.2.0.2")) // taken: ignored
	if addr, _ := a.assign("ns/web-1#0", netip.Addr{}); addr.String() == "10.2.0.2" {
		t.Error("an address observed for one owner was handed to another")
	}
	if addr, _ := a.assign("ns/web-2#0", netip.MustParseAddr("10.2.0.77")); addr.String() != "10.2.0.77" {
		t.Errorf("a free address an owner reports is not kept: %s", addr)
	}
	a.release("ns/web-0#")
	if addr, _ := a.assign("ns/web-9#0", netip.MustParseAddr("10.2.0.2")); addr.String() != "10.2.0.2" {
		t.Errorf("releasing by instance prefix did not free the address: %s", addr)
	}
}

func TestNewAllocatorRejectsBadRanges(t *testing.T) {
	for _, cidr := range []string{"", "10.0.0.0", "10.0.0.0/31", "10.0.0.0/32", "nonsense/8"} {
		if _, err := newAllocator(cidr); err == nil {
			t.Errorf("newAllocator(%q) succeeded", cidr)
		}
	}
	if _, err := newAllocator("fd00::/120"); err != nil {
		t.Errorf("an IPv6 range was rejected: %v", err)
	}
}

package simnetwork

import (
	"errors"
	"net/netip"
	"testing"
)

func TestSubnetsAreCutFromThePoolInOrderAndKept(t *testing.T) {
	p, err := newPool("10.9.0.0/16", 24)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := p.subnet("ns/a-dfw")
	b, _ := p.subnet("ns/b-dfw")
	again, _ := p.subnet("ns/a-dfw")
	if a.String() != "10.9.0.0/24" || b.String() != "10.9.1.0/24" || again != a {
		t.Fatalf("subnets = %s, %s, %s; want 10.9.0.0/24, 10.9.1.0/24 and the first again", a, b, again)
	}
}

func TestAddressesSkipTheNetworkGatewayAndBroadcastAndRunOut(t *testing.T) {
	p, err := newPool("10.9.0.0/16", 29)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.subnet("ns/n-dfw"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range 5 {
		a, err := p.assign("ns/b"+string(rune('0'+i)), "ns/n-dfw")
		if err != nil {
			t.Fatalf("address %d: %v", i, err)
		}
		got = append(got, a.String())
	}
	want := []string{"10.9.0.2", "10.9.0.3", "10.9.0.4", "10.9.0.5", "10.9.0.6"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("addresses = %v, want %v", got, want)
		}
	}
	if _, err := p.assign("ns/b5", "ns/n-dfw"); !errors.Is(err, errExhausted) {
		t.Fatalf("sixth address: err = %v, want exhausted (a /29 holds 5)", err)
	}
	p.release("ns/b2")
	if a, err := p.assign("ns/b5", "ns/n-dfw"); err != nil || a.String() != "10.9.0.4" {
		t.Fatalf("after a release: %s, %v; want the freed 10.9.0.4", a, err)
	}
	if a, _ := p.assign("ns/b0", "ns/n-dfw"); a.String() != "10.9.0.2" {
		t.Fatalf("a holder asking again got %s, want its own 10.9.0.2", a)
	}
}

func TestAPoolWithoutRoomRefusesAnotherSubnet(t *testing.T) {
	p, err := newPool("10.9.0.0/30", 24)
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.subnet("ns/a-dfw")
	if err != nil || s.String() != "10.9.0.0/30" {
		t.Fatalf("subnet = %s, %v; want the whole /30 pool", s, err)
	}
	if _, err := p.subnet("ns/b-dfw"); !errors.Is(err, errExhausted) {
		t.Fatalf("second subnet: err = %v, want exhausted", err)
	}
}

func TestObservedAllocationsAreNotHandedOutAgain(t *testing.T) {
	p, _ := newPool("10.9.0.0/16", 24)
	p.observeSubnet("ns/a-dfw", netip.MustParsePrefix("10.9.0.0/24"))
	p.observe("ns/b0", "ns/a-dfw", netip.MustParseAddr("10.9.0.2"))
	if s, _ := p.subnet("ns/b-dfw"); s.String() != "10.9.1.0/24" {
		t.Fatalf("new subnet = %s, want 10.9.1.0/24 (10.9.0.0/24 is taken)", s)
	}
	if a, _ := p.assign("ns/b1", "ns/a-dfw"); a.String() != "10.9.0.3" {
		t.Fatalf("new address = %s, want 10.9.0.3 (10.9.0.2 is held)", a)
	}
}

func TestBadPoolsAreRefusedWithTheFix(t *testing.T) {
	for _, tc := range []struct {
		cidr string
		bits int
	}{{"10.9.0.0", 24}, {"fd00::/64", 24}, {"10.9.0.0/31", 24}, {"10.9.0.0/16", 31}, {"10.9.0.0/16", 0}} {
		if _, err := newPool(tc.cidr, tc.bits); err == nil {
			t.Errorf("newPool(%q, %d) succeeded", tc.cidr, tc.bits)
		}
	}
}

// FuzzPool checks, for any pool and subnet size, that subnets stay inside
// the pool without overlapping and that addresses stay inside their subnet,
// are never its network, gateway or broadcast address, and are never
// handed out twice.
func FuzzPool(f *testing.F) {
	f.Add("10.9.0.0/16", 24, uint8(3), uint8(7))
	f.Add("10.9.0.0/30", 24, uint8(2), uint8(3))
	f.Add("192.168.4.0/22", 29, uint8(200), uint8(9))
	f.Add("10.0.0.0", 24, uint8(1), uint8(1))
	f.Fuzz(func(t *testing.T, cidr string, bits int, subnets, addrs uint8) {
		p, err := newPool(cidr, bits)
		if err != nil {
			return
		}
		var taken []netip.Prefix
		for i := range int(subnets % 16) {
			key := "ns/net" + string(rune('a'+i))
			s, err := p.subnet(key)
			if errors.Is(err, errExhausted) {
				break
			}
			if err != nil {
				t.Fatalf("subnet: %v", err)
			}
			if !p.prefix.Contains(s.Addr()) || s.Bits() < p.prefix.Bits() {
				t.Fatalf("subnet %s outside the pool %s", s, p.prefix)
			}
			for _, o := range taken {
				if o.Overlaps(s) {
					t.Fatalf("subnets %s and %s overlap", o, s)
				}
			}
			taken = append(taken, s)
			seen := map[netip.Addr]bool{}
			for j := range int(addrs) {
				a, err := p.assign(key+"/b"+string(rune('0'+j)), key)
				if errors.Is(err, errExhausted) {
					if uint64(len(seen)) != hosts(s) {
						t.Fatalf("subnet %s exhausted after %d addresses, want %d", s, len(seen), hosts(s))
					}
					break
				}
				if err != nil {
					t.Fatalf("assign: %v", err)
				}
				if !s.Contains(a) || a == s.Addr() || a == gateway(s) || a == uintAddr(addrUint(s.Addr())+(uint64(1)<<(32-s.Bits()))-1) || seen[a] {
					t.Fatalf("address %s of subnet %s is the network, gateway or broadcast address, outside it, or taken twice", a, s)
				}
				seen[a] = true
			}
		}
	})
}

package simnetwork

import (
	"errors"
	"fmt"
	"net/netip"
)

// errExhausted is returned when a pool or subnet has nothing free.
var errExhausted = errors.New("exhausted")

// pool is a city's address pool, cut into subnets of one size, and the
// addresses handed out of each subnet. It is not safe for concurrent use:
// the reconciler runs one reconcile at a time.
type pool struct {
	prefix netip.Prefix
	// bits is the prefix length of each subnet.
	bits int
	// subnets maps a subnet key (namespace/name of its context) to its
	// prefix.
	subnets map[string]netip.Prefix
	// used maps each subnet key to the addresses given out and their
	// holders (binding namespace/name).
	used map[string]map[netip.Addr]string
	// held maps a holder to its subnet key and address.
	held map[string]holding
}

// holding is one holder's address.
type holding struct {
	subnet string
	addr   netip.Addr
}

// newPool parses an IPv4 cidr and checks the subnet prefix length.
func newPool(cidr string, subnetBits int) (*pool, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("invalid address pool %q: use an IPv4 CIDR such as 10.128.0.0/16: %w", cidr, err)
	}
	if !p.Addr().Is4() {
		return nil, fmt.Errorf("invalid address pool %q: only IPv4 pools are simulated", cidr)
	}
	if p.Bits() > 30 {
		return nil, fmt.Errorf("address pool %q is too small: it needs at least a /30 (a gateway and one address)", cidr)
	}
	if subnetBits < 1 || subnetBits > 30 {
		return nil, fmt.Errorf("invalid subnet prefix length %d: use 1 to 30 (a /30 holds a gateway and one address)", subnetBits)
	}
	return &pool{
		prefix:  p.Masked(),
		bits:    max(subnetBits, p.Bits()),
		subnets: map[string]netip.Prefix{},
		used:    map[string]map[netip.Addr]string{},
		held:    map[string]holding{},
	}, nil
}

// observeSubnet records a subnet that exists already.
func (p *pool) observeSubnet(key string, prefix netip.Prefix) {
	p.subnets[key] = prefix.Masked()
}

// subnet returns the prefix of a subnet key, allocating the first free one
// of the pool when the key has none.
func (p *pool) subnet(key string) (netip.Prefix, error) {
	if s, ok := p.subnets[key]; ok {
		return s, nil
	}
	taken := make(map[netip.Addr]bool, len(p.subnets))
	for _, s := range p.subnets {
		taken[s.Addr()] = true
	}
	step := uint64(1) << (32 - p.bits)
	base := addrUint(p.prefix.Addr())
	count := uint64(1) << (p.bits - p.prefix.Bits())
	for i := range count {
		start := uintAddr(base + i*step)
		if taken[start] {
			continue
		}
		s := netip.PrefixFrom(start, p.bits)
		p.subnets[key] = s
		return s, nil
	}
	return netip.Prefix{}, errExhausted
}

// subnetCount returns how many subnets the pool holds.
func (p *pool) subnetCount() uint64 {
	return uint64(1) << (p.bits - p.prefix.Bits())
}

// gateway returns a subnet's gateway: its first host.
func gateway(s netip.Prefix) netip.Addr {
	return s.Addr().Next()
}

// hosts returns how many addresses a subnet can give out (all but the
// network, gateway and broadcast addresses).
func hosts(s netip.Prefix) uint64 {
	return (uint64(1) << (32 - s.Bits())) - 3
}

// observe records an address a holder already has; one outside the
// subnet, or held by another, is ignored.
func (p *pool) observe(holder, key string, addr netip.Addr) {
	s, ok := p.subnets[key]
	if !ok || !s.Contains(addr) || p.used[key][addr] != "" {
		return
	}
	p.take(holder, key, addr)
}

// assign returns the holder's address in the subnet of key, giving it the
// lowest free one when it has none there.
func (p *pool) assign(holder, key string) (netip.Addr, error) {
	if h, ok := p.held[holder]; ok && h.subnet == key {
		return h.addr, nil
	}
	p.release(holder)
	s, ok := p.subnets[key]
	if !ok {
		return netip.Addr{}, fmt.Errorf("no subnet for %s", key)
	}
	last := addrUint(s.Addr()) + (uint64(1) << (32 - s.Bits())) - 2
	for u := addrUint(gateway(s)) + 1; u <= last; u++ {
		a := uintAddr(u)
		if p.used[key][a] == "" {
			p.take(holder, key, a)
			return a, nil
		}
	}
	return netip.Addr{}, errExhausted
}

// take records that holder has addr in the subnet of key.
func (p *pool) take(holder, key string, addr netip.Addr) {
	if p.used[key] == nil {
		p.used[key] = map[netip.Addr]string{}
	}
	p.used[key][addr] = holder
	p.held[holder] = holding{subnet: key, addr: addr}
}

// release frees a holder's address.
func (p *pool) release(holder string) {
	h, ok := p.held[holder]
	if !ok {
		return
	}
	delete(p.used[h.subnet], h.addr)
	delete(p.held, holder)
}

// addrUint and uintAddr convert IPv4 addresses to and from integers.
func addrUint(a netip.Addr) uint64 {
	b := a.As4()
	return uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
}

func uintAddr(u uint64) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)})
}

// ValidatePool checks an address pool and subnet prefix length as the
// stand-in would, for flag validation.
func ValidatePool(cidr string, subnetBits int) error {
	_, err := newPool(cidr, subnetBits)
	return err
}

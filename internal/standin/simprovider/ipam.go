package simprovider

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
)

// allocator hands out addresses from one range, each to one owner (an
// Instance interface), and remembers them until released. It skips the
// range's first address (the network) and, for IPv4, the second (the
// gateway) and the last (broadcast).
type allocator struct {
	mu      sync.Mutex
	prefix  netip.Prefix
	first   netip.Addr
	last    netip.Addr
	next    netip.Addr
	used    map[netip.Addr]string
	byOwner map[string]netip.Addr
}

// newAllocator parses cidr ("10.128.0.0/16").
func newAllocator(cidr string) (*allocator, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("invalid address range %q: %w", cidr, err)
	}
	p = p.Masked()
	first := p.Addr().Next()
	last := lastAddr(p)
	if p.Addr().Is4() {
		first = first.Next()
		last = last.Prev()
	}
	if !first.IsValid() || !last.IsValid() || last.Less(first) {
		return nil, fmt.Errorf("address range %q is too small", cidr)
	}
	return &allocator{
		prefix:  p,
		first:   first,
		last:    last,
		next:    first,
		used:    map[netip.Addr]string{},
		byOwner: map[string]netip.Addr{},
	}, nil
}

// lastAddr returns the last address of a prefix.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	hostBits := len(b)*8 - p.Bits()
	for i := len(b) - 1; i >= 0 && hostBits > 0; i-- {
		n := min(hostBits, 8)
		b[i] |= byte(1<<n - 1)
		hostBits -= n
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// errExhausted is returned when every address of the range is in use.
var errExhausted = errors.New("address range exhausted")

// assign returns owner's address, keeping the one it reports (have) when
// that is still free or already its own, and otherwise handing out the
// next free address.
func (a *allocator) assign(owner string, have netip.Addr) (netip.Addr, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if addr, ok := a.byOwner[owner]; ok {
		return addr, nil
	}
	if have.IsValid() && a.prefix.Contains(have) {
		if holder, taken := a.used[have]; !taken || holder == owner {
			a.take(owner, have)
			return have, nil
		}
	}
	start := a.next
	for addr := start; ; {
		if _, taken := a.used[addr]; !taken {
			a.take(owner, addr)
			a.next = a.wrap(addr.Next())
			return addr, nil
		}
		addr = a.wrap(addr.Next())
		if addr == start {
			return netip.Addr{}, fmt.Errorf("%w: %s", errExhausted, a.prefix)
		}
	}
}

// observe records an address an owner already holds (seen in status after
// a restart), unless another owner holds it.
func (a *allocator) observe(owner string, addr netip.Addr) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !addr.IsValid() || !a.prefix.Contains(addr) {
		return
	}
	if _, ok := a.byOwner[owner]; ok {
		return
	}
	if _, taken := a.used[addr]; !taken {
		a.take(owner, addr)
	}
}

// release frees the addresses of every owner whose name starts with
// prefix (all interfaces of one Instance).
func (a *allocator) release(prefix string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for owner, addr := range a.byOwner {
		if strings.HasPrefix(owner, prefix) {
			delete(a.byOwner, owner)
			delete(a.used, addr)
		}
	}
}

// take records addr as owner's; the caller holds the lock.
func (a *allocator) take(owner string, addr netip.Addr) {
	a.used[addr] = owner
	a.byOwner[owner] = addr
}

// wrap returns addr, or the first address once addr is past the last.
func (a *allocator) wrap(addr netip.Addr) netip.Addr {
	if !addr.IsValid() || a.last.Less(addr) {
		return a.first
	}
	return addr
}

// Package simnetwork is the networking stand-in the local platform and the
// tests run in each cell in place of Datum's networking service
// (network-services-operator), as compute-quota stands in for Milo's quota.
// It plays the service's part of the networking.datumapis.com contract
// behind the NetworkingIntegration feature gate:
//
//   - for every NetworkBinding (compute creates one per Instance network
//     interface) it makes sure the network's NetworkContext for the
//     binding's city exists, with a SubnetClaim and the Subnet allocated to
//     it: a prefix of SubnetPrefixLength bits (default /24) taken from the
//     city's address pool (CIDR; the whole pool when it is smaller);
//   - it assigns the binding the lowest free address of that subnet (not
//     the network address, the gateway — the subnet's first host — or the
//     broadcast address), records it in status.addresses with the gateway
//     and subnet, and reports Ready=True (Bound) with the context in
//     status.networkContextRef;
//   - its failure mode is a real one: when the subnet has no free address
//     the binding is Ready=False with reason SubnetExhausted, and when the
//     pool has no room for another subnet, AddressPoolExhausted, each with a
//     message naming the subnet or pool and what to do. A small pool or a
//     long subnet prefix (compute-manager's --simulated-network-cidr and
//     --simulated-network-subnet-prefix) provokes it. A refused binding is
//     looked at again every RetryAfter, so freed addresses are picked up.
//
// Its state lives in what it writes: on its first reconcile it reads the
// Subnets and the addresses of the bindings from the cache, so a restart
// never hands an address out twice. Addresses are freed when their binding
// is deleted (with its Instance, by the garbage collector); NetworkContexts,
// SubnetClaims and Subnets stay, shared by every binding of the network in
// the city, as in Datum. One reconcile runs at a time: the allocation is a
// single critical section.
package simnetwork

// Package v1alpha contains compute's copy of the two Datum networking kinds
// compute reads, networking.datumapis.com/v1alpha: Location (a point of
// presence, whose city code lives in spec.topology under CityCodeTopologyKey)
// and LocationBinding (this project may use that Location); and the kinds
// of the networking contract behind the NetworkingIntegration feature gate:
// NetworkBinding (a network is needed here), NetworkContext (a network's
// presence in a city), SubnetClaim and Subnet.
//
// Datum's network-services-operator owns this API; compute only needs
// wire-compatible types for its controllers, tests and local platform.
//
// +kubebuilder:object:generate=true
// +groupName=networking.datumapis.com
package v1alpha

// Package instancetype holds the InstanceType controller of the management
// role: in every project plane it keeps the status of the InstanceType
// catalog the operator publishes there.
//
// Two fields are its to write:
//
//   - status.deprecatedAt, the first time the controller sees a type
//     Deprecated. It is never moved nor cleared afterwards (the phase never
//     goes back), and admission measures the grace period before Disabled
//     from it.
//   - the Ready condition: True (reason Valid) while the type is Active or
//     Deprecated and any replacement it names exists and is not Disabled;
//     False with reason Disabled once the type is Disabled, and with
//     ReplacementNotFound or ReplacementDisabled when its replacement is
//     missing or Disabled. Its observedGeneration is the generation the
//     verdict was computed from.
//
// The verdict is a pure function of the type and its replacement (status.go);
// the controller reads both, computes it, and patches the status only when it
// changed. A type is reconciled again when its replacement changes.
package instancetype

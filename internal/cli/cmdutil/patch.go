package cmdutil

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrChanged reports that an object's spec changed between the read a
// command decided on and its write.
var ErrChanged = errors.New("changed since it was read")

// JSONPatch is an RFC 6902 patch under construction.
type JSONPatch []map[string]any

// Test adds a test operation: the patch fails unless path holds value.
func (p *JSONPatch) Test(path string, value any) {
	*p = append(*p, map[string]any{"op": "test", "path": path, "value": value})
}

// Replace adds a replace operation.
func (p *JSONPatch) Replace(path string, value any) {
	*p = append(*p, map[string]any{"op": "replace", "path": path, "value": value})
}

// Add adds an add operation (which also replaces an existing member).
func (p *JSONPatch) Add(path string, value any) {
	*p = append(*p, map[string]any{"op": "add", "path": path, "value": value})
}

// Remove adds a remove operation.
func (p *JSONPatch) Remove(path string) {
	*p = append(*p, map[string]any{"op": "remove", "path": path})
}

// GuardGeneration makes the patch apply only if the object's generation
// is still generation: its spec did not change since it was read. Status
// writes, which controllers make all the time, do not trip it.
func (p *JSONPatch) GuardGeneration(generation int64) {
	p.Test("/metadata/generation", generation)
}

// SetMapEntries sets entries of the string map at path (labels,
// annotations), creating the map when current is nil.
func (p *JSONPatch) SetMapEntries(path string, current, entries map[string]string) {
	if len(entries) == 0 {
		return
	}
	if current == nil {
		p.Add(path, entries)
		return
	}
	keys := make([]string, 0, len(entries))
	for k := range entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p.Add(path+"/"+EscapePointer(k), entries[k])
	}
}

// EscapePointer escapes a JSON pointer token.
func EscapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// Apply sends the patch (with opts, e.g. server dry-run). A failed guard
// returns an error wrapping ErrChanged.
func (p JSONPatch) Apply(ctx context.Context, c client.Client, obj client.Object, opts ...client.PatchOption) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	err = c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, data), opts...)
	if err != nil && (apierrors.IsConflict(err) || isTestFailure(err)) {
		return errors.Join(ErrChanged, err)
	}
	return err
}

// isTestFailure reports whether the server refused a patch because a test
// operation failed (not because admission or the schema refused a field:
// those errors name the field).
func isTestFailure(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil &&
		slices.ContainsFunc(status.Status().Details.Causes, func(c metav1.StatusCause) bool { return c.Field != "" }) {
		return false
	}
	msg := err.Error()
	return (apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || strings.Contains(msg, "unprocessable")) &&
		strings.Contains(msg, "test")
}

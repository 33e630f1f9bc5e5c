package logs

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
)

// apiSource reads the project: Workloads and Instances with the client,
// logs from the debug API.
type apiSource struct {
	c         apiClient
	rest      rest.Interface
	namespace string
	city      string
}

// isWorkload reports whether a Workload has the name.
func (s *apiSource) isWorkload(ctx context.Context, name string) (bool, error) {
	err := s.c.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, &computev1alpha.Workload{})
	switch {
	case err == nil:
		return true, nil
	case isNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("failed to read workload %q: %w", name, err)
}

// instances lists the Workload's Instances (in the city, with --city),
// sorted by name.
func (s *apiSource) instances(ctx context.Context, workload string) ([]instanceRef, error) {
	sel := client.MatchingLabels{computev1alpha.WorkloadNameLabel: workload}
	if s.city != "" {
		sel[computev1alpha.CityCodeLabel] = s.city
	}
	list := &computev1alpha.InstanceList{}
	if err := s.c.List(ctx, list, client.InNamespace(s.namespace), sel); err != nil {
		return nil, fmt.Errorf("failed to list the instances of workload %q: %w", workload, err)
	}
	refs := make([]instanceRef, 0, len(list.Items))
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp != nil {
			continue
		}
		refs = append(refs, refOf(&list.Items[i]))
	}
	return refs, nil
}

// instance reads one Instance.
func (s *apiSource) instance(ctx context.Context, name string) (instanceRef, bool, error) {
	inst := &computev1alpha.Instance{}
	err := s.c.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, inst)
	switch {
	case err == nil:
		return refOf(inst), inst.DeletionTimestamp == nil, nil
	case isNotFound(err):
		return instanceRef{}, false, nil
	}
	return instanceRef{}, false, fmt.Errorf("failed to read instance %q: %w", name, err)
}

// open streams an Instance's log through the debug API.
func (s *apiSource) open(ctx context.Context, name string, req logRequest) (io.ReadCloser, error) {
	r := s.rest.Get().AbsPath(logPath(s.namespace, name))
	for k, v := range req.params() {
		r = r.Param(k, v)
	}
	return r.Stream(ctx)
}

// params are the log request's query parameters (the Pod log API's).
func (r logRequest) params() map[string]string {
	p := map[string]string{}
	if r.follow {
		p["follow"] = "true"
	}
	if r.previous {
		p["previous"] = "true"
	}
	if r.timestamps {
		p["timestamps"] = "true"
	}
	if r.tail >= 0 {
		p["tailLines"] = strconv.FormatInt(r.tail, 10)
	}
	if !r.sinceTime.IsZero() {
		p["sinceTime"] = r.sinceTime.UTC().Format(time.RFC3339)
	} else if r.since > 0 {
		p["sinceSeconds"] = strconv.FormatInt(int64((r.since+time.Second-1)/time.Second), 10)
	}
	if r.container != "" {
		p["container"] = r.container
	}
	return p
}

package cmdutil

import (
	"context"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/locations"
)

// Completions never prompt, never request compute, and stay silent on
// errors: a shell waiting on a TAB is no place for either.

// completeFrom returns the candidates that start with toComplete.
func completeFrom(candidates []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	for _, c := range candidates {
		if strings.HasPrefix(strings.ToLower(c), strings.ToLower(toComplete)) {
			out = append(out, c)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completionContext returns the command's context, or a background one.
func completionContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// CompleteCities completes --city with the cities enabled for the
// namespace (its LocationBindings). A comma-separated value completes its
// last element.
func CompleteCities(f *Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		c, err := f.connect()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		cities, err := locations.Load(completionContext(cmd), c.Client, c.Namespace)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		done, last := "", toComplete
		if i := strings.LastIndex(toComplete, ","); i >= 0 {
			done, last = toComplete[:i+1], toComplete[i+1:]
		}
		var candidates []string
		for _, code := range cities.Codes() {
			if !slices.Contains(strings.Split(strings.ToUpper(done), ","), code) {
				candidates = append(candidates, done+code)
			}
		}
		return completeFrom(candidates, done+last)
	}
}

// CompleteInstanceTypes completes --instance-type with the project's
// InstanceTypes a new Workload may choose (every one but the Disabled).
func CompleteInstanceTypes(f *Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		c, err := f.connect()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		types, err := catalog.Load(completionContext(cmd), c.Client)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return completeFrom(types.Names(), "")
	}
}

// CompletePlacements completes --placement with the placements of the
// workload named by the first argument.
func CompletePlacements(f *Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := f.connect()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var w computev1alpha.Workload
		if err := c.Client.Get(completionContext(cmd), client.ObjectKey{Namespace: c.Namespace, Name: args[0]}, &w); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, p := range w.Spec.Placements {
			names = append(names, p.Name)
		}
		return completeFrom(names, toComplete)
	}
}

// completeNamespaces completes -n with the namespaces the user may list.
func (f *Factory) completeNamespaces(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	c, err := f.connect()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var list corev1.NamespaceList
	if err := c.Client.List(completionContext(cmd), &list); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, 0, len(list.Items))
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	return completeFrom(names, toComplete)
}

// completeContexts completes --context with the contexts of the
// kubeconfig (--kubeconfig, else $KUBECONFIG or ~/.kube/config).
func (f *Factory) completeContexts(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.Kubeconfig
	cfg, err := rules.Load()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, 0, len(cfg.Contexts))
	for name := range cfg.Contexts {
		names = append(names, name)
	}
	slices.Sort(names)
	return completeFrom(names, toComplete)
}

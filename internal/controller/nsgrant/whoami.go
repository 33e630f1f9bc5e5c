package nsgrant

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// SelfSubjectReview returns a Reconciler.WhoAmI that asks the cluster of
// cfg, with a SelfSubjectReview, which user it authenticates cfg's
// identity as; plane names that cluster in its errors.
func SelfSubjectReview(cfg *rest.Config, plane string) (func(context.Context) (string, error), error) {
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to create a client of the %s: %w", plane, err)
	}
	return func(ctx context.Context) (string, error) {
		review, err := clientset.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return "", fmt.Errorf("SelfSubjectReview in the %s: %w", plane, err)
		}
		return review.Status.UserInfo.Username, nil
	}, nil
}

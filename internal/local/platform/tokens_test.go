package platform

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/citycells/compute/internal/planes"
)

// tokenTTL is the shortest lifetime the TokenRequest API grants.
const tokenTTL = 10 * time.Minute

func TestTokensAreRefreshedOnlyWhenDueAndARunningClientPicksTheNewOneUp(t *testing.T) {
	env := planes.StartForTest(t, planes.Options{Planes: []planes.PlaneSpec{{Name: "project-default"}}})
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(env.Plane("project-default").Config())
	newAccount := func() {
		t.Helper()
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "compute-manager"}}
		if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	newAccount()

	// A platform recorded in dir whose one identity's kubeconfig names its
	// token file, as Up writes them.
	dir := t.TempDir()
	rec := TokenRecord{Path: filepath.Join(dir, identitiesDir, tokensDir, "compute-manager-project-default.token"),
		Plane: "project-default", Namespace: "default", Name: "compute-manager"}
	mint := func(ctx context.Context, plane, namespace, name string, ttl time.Duration) (string, error) {
		return mintToken(ctx, env.Plane(plane).Config(), plane, namespace, name, ttl)
	}
	if err := mintAll(ctx, []TokenRecord{rec}, mint, tokenTTL); err != nil {
		t.Fatal(err)
	}
	minted := time.Now()
	st := &State{Version: stateVersion, Dir: dir, IdentityTokens: []TokenRecord{rec}, IdentityTokensExpire: minted.Add(tokenTTL)}
	if err := st.write(); err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["p"] = &clientcmdapi.Cluster{Server: env.Plane("project-default").URL(), CertificateAuthorityData: env.Plane("project-default").CAPEM()}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{TokenFile: rec.Path}
	kc.Contexts["p"] = &clientcmdapi.Context{Cluster: "p", AuthInfo: "u"}
	kc.CurrentContext = "p"
	cfg, err := clientcmd.NewDefaultClientConfig(*kc, nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	// One client for the whole test, like a running compute-manager's.
	running := kubernetes.NewForConfigOrDie(cfg)
	whoAmI := func() (string, error) {
		r, err := running.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return r.Status.UserInfo.Username, nil
	}
	const user = "system:serviceaccount:default:compute-manager"
	if got, err := whoAmI(); err != nil || got != user {
		t.Fatalf("the client is %q, %v; want %s", got, err, user)
	}

	// The clock: a refresher checking at now() with a threshold of 5
	// minutes before expiry.
	now := minted
	r := TokenRefresher{Dir: dir, Now: func() time.Time { return now }, Before: 5 * time.Minute, TTL: tokenTTL, mint: mint}
	old := readFile(t, rec.Path)

	now = minted.Add(4 * time.Minute)
	res, err := r.Refresh(ctx, false)
	if err != nil || res.Refreshed || readFile(t, rec.Path) != old {
		t.Fatalf("6 minutes before expiry: Refresh() = %+v, %v, token changed %v; want nothing done", res, err, readFile(t, rec.Path) != old)
	}

	// The old token stops working (its ServiceAccount is recreated), and
	// the refresher, now due, mints one of the new account.
	if err := admin.CoreV1().ServiceAccounts("default").Delete(ctx, "compute-manager", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	newAccount()
	stale := rest.CopyConfig(cfg)
	stale.BearerTokenFile, stale.BearerToken = "", old
	// The apiserver finds the ServiceAccount's new uid through its
	// informers, a moment later.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		_, err := kubernetes.NewForConfigOrDie(stale).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if apierrors.IsUnauthorized(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the old token still authenticates (%v): the test would prove nothing", err)
		}
	}
	now = minted.Add(6 * time.Minute)
	res, err = r.Refresh(ctx, false)
	if err != nil || !res.Refreshed || res.Tokens != 1 || !res.Expire.Equal(now.Add(tokenTTL)) {
		t.Fatalf("4 minutes before expiry: Refresh() = %+v, %v; want 1 token refreshed, valid until %s", res, err, now.Add(tokenTTL))
	}
	if readFile(t, rec.Path) == old {
		t.Fatal("the token file still holds the old token")
	}
	saved, err := ReadState(dir)
	if err != nil || !saved.IdentityTokensExpire.Equal(now.Add(tokenTTL)) {
		t.Fatalf("the state records expiry %v (%v), want %s", saved, err, now.Add(tokenTTL))
	}

	// The running client reads the file again (client-go keeps a token
	// file's content for a minute) and keeps working without being
	// rebuilt. A real refresh comes days before the old token expires, so
	// nothing fails meanwhile; here the old one was revoked on purpose.
	refreshed := time.Now()
	for deadline := refreshed.Add(90 * time.Second); ; time.Sleep(time.Second) {
		got, err := whoAmI()
		if err == nil && got == user {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the running client does not pick the new token up: %q, %v", got, err)
		}
	}
	t.Logf("the running client uses the new token %s after the refresh", since(refreshed))

	// Forced, a refresh mints again however long the tokens last.
	now = minted.Add(7 * time.Minute)
	if res, err := r.Refresh(ctx, true); err != nil || !res.Refreshed {
		t.Fatalf("forced: Refresh() = %+v, %v; want refreshed", res, err)
	}
}

func TestAPlatformWithoutTokenFilesHasNothingToRefresh(t *testing.T) {
	dir := t.TempDir()
	expire := time.Now().Add(time.Minute)
	if err := (&State{Version: stateVersion, Dir: dir, IdentityTokensExpire: expire}).write(); err != nil {
		t.Fatal(err)
	}
	res, err := TokenRefresher{Dir: dir, mint: func(context.Context, string, string, string, time.Duration) (string, error) {
		t.Fatal("a token is minted")
		return "", nil
	}}.Refresh(t.Context(), true)
	if err != nil || res.Refreshed || res.Tokens != 0 {
		t.Fatalf("Refresh() = %+v, %v; want nothing to do", res, err)
	}
}

// readFile returns a file's content.
func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

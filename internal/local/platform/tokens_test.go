//go:build linux

package platform

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	var granted time.Time
	request := func(ctx context.Context, plane, namespace, name string, ttl time.Duration) (authenticationv1.TokenRequestStatus, error) {
		status, err := requestToken(ctx, env.Plane(plane).Config(), plane, namespace, name, ttl)
		granted = status.ExpirationTimestamp.Time
		return status, err
	}
	r := TokenRefresher{Dir: dir, Now: func() time.Time { return now }, Before: 5 * time.Minute, TTL: tokenTTL, request: request}
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
	if granted.IsZero() {
		t.Fatal("the API server reports no expirationTimestamp")
	}
	if err != nil || !res.Refreshed || res.Tokens != 1 || !res.Expire.Equal(granted) {
		t.Fatalf("4 minutes before expiry: Refresh() = %+v, %v; want 1 token refreshed, valid until %s (the server's expiry)", res, err, granted)
	}
	if readFile(t, rec.Path) == old {
		t.Fatal("the token file still holds the old token")
	}
	saved, err := ReadState(dir)
	if err != nil || !saved.IdentityTokensExpire.Equal(granted) {
		t.Fatalf("the state records expiry %v (%v), want %s", saved, err, granted)
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
	res, err := TokenRefresher{Dir: dir, request: func(context.Context, string, string, string, time.Duration) (authenticationv1.TokenRequestStatus, error) {
		t.Fatal("a token is minted")
		return authenticationv1.TokenRequestStatus{}, nil
	}}.Refresh(t.Context(), true)
	if err != nil || res.Refreshed || res.Tokens != 0 {
		t.Fatalf("Refresh() = %+v, %v; want nothing to do", res, err)
	}
}

// fakeJWT is a token whose claims say it was issued at iat and expires at
// exp, as the API server's ServiceAccount tokens do (unsigned: only the
// refresher reads it).
func fakeJWT(iat, exp time.Time) string {
	claims, _ := json.Marshal(map[string]int64{"iat": iat.Unix(), "exp": exp.Unix()})
	return "e30." + base64.RawURLEncoding.EncodeToString(claims) + ".sig"
}

// shorteningServer is a tokenRequester standing for an API server that
// grants tokens for granted whatever was asked for
// (--service-account-max-token-expiration), at the clock now.
func shorteningServer(now func() time.Time, granted time.Duration, asked *[]time.Duration) tokenRequester {
	return func(_ context.Context, _, _, _ string, ttl time.Duration) (authenticationv1.TokenRequestStatus, error) {
		*asked = append(*asked, ttl)
		issued := now().Truncate(time.Second)
		return authenticationv1.TokenRequestStatus{Token: fakeJWT(issued, issued.Add(granted)),
			ExpirationTimestamp: metav1.NewTime(issued.Add(granted))}, nil
	}
}

// TestTheRefreshFollowsTheExpiryTheServerGrants: 1 hour is asked for, the
// server grants 10 minutes. The refresh is due at half the granted
// lifetime (5 minutes), not at half of the hour asked for — the tokens
// would be dead for 20 minutes — and the state (what `compute-local
// status` shows) records the granted expiry.
func TestTheRefreshFollowsTheExpiryTheServerGrants(t *testing.T) {
	const asked, granted = time.Hour, 10 * time.Minute
	base := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	now := base
	clock := func() time.Time { return now }
	dir := t.TempDir()
	rec := TokenRecord{Path: filepath.Join(dir, identitiesDir, tokensDir, "compute-manager-project-default.token"),
		Plane: "project-default", Namespace: "default", Name: "compute-manager"}
	if err := (&State{Version: stateVersion, Dir: dir, IdentityTokens: []TokenRecord{rec}, IdentityTokensExpire: base.Add(asked)}).write(); err != nil {
		t.Fatal(err)
	}
	var requests []time.Duration
	r := TokenRefresher{Dir: dir, Now: clock, TTL: asked, request: shorteningServer(clock, granted, &requests)}

	res, err := r.Refresh(t.Context(), true)
	if err != nil || !res.Refreshed {
		t.Fatalf("forced: Refresh() = %+v, %v; want refreshed", res, err)
	}
	if len(requests) != 1 || requests[0] != asked {
		t.Fatalf("asked for %v; want [%s]", requests, asked)
	}
	if !res.Expire.Equal(base.Add(granted)) {
		t.Errorf("the tokens expire at %s by Refresh; the server granted until %s", res.Expire, base.Add(granted))
	}
	if want := base.Add(granted / 2); !res.Due.Equal(want) {
		t.Errorf("the next refresh is due at %s; want %s, half the granted lifetime", res.Due, want)
	}
	if st, err := ReadState(dir); err != nil || !st.IdentityTokensExpire.Equal(base.Add(granted)) {
		t.Errorf("the state (compute-local status) records expiry %v (%v); want %s", st.IdentityTokensExpire, err, base.Add(granted))
	}

	// Not yet due 4 minutes on; due 6 minutes on, before the token dies.
	now = base.Add(4 * time.Minute)
	if res, err := r.Refresh(t.Context(), false); err != nil || res.Refreshed || !res.Due.Equal(base.Add(granted/2)) {
		t.Errorf("4 minutes on: Refresh() = %+v, %v; want nothing done, due at %s", res, err, base.Add(granted/2))
	}
	now = base.Add(6 * time.Minute)
	if res, err := r.Refresh(t.Context(), false); err != nil || !res.Refreshed || !res.Expire.Equal(now.Add(granted)) {
		t.Errorf("6 minutes on: Refresh() = %+v, %v; want refreshed, valid until %s", res, err, now.Add(granted))
	}

	// Tokens minted by another process (compute-local up), which recorded
	// the hour it asked for: the token files' claims tell the granted
	// lifetime; the refresher corrects the recorded expiry and is due at
	// half of it.
	issued := base.Add(time.Hour)
	if err := writeToken(rec.Path, fakeJWT(issued, issued.Add(granted))); err != nil {
		t.Fatal(err)
	}
	if err := (&State{Version: stateVersion, Dir: dir, IdentityTokens: []TokenRecord{rec}, IdentityTokensExpire: issued.Add(asked)}).write(); err != nil {
		t.Fatal(err)
	}
	now = issued.Add(time.Minute)
	res, err = r.Refresh(t.Context(), false)
	if err != nil || res.Refreshed || !res.Expire.Equal(issued.Add(granted)) || !res.Due.Equal(issued.Add(granted/2)) {
		t.Errorf("1 minute after another process minted: Refresh() = %+v, %v; want nothing done, expiry %s, due %s", res, err, issued.Add(granted), issued.Add(granted/2))
	}
	if st, err := ReadState(dir); err != nil || !st.IdentityTokensExpire.Equal(issued.Add(granted)) {
		t.Errorf("the state (compute-local status) still records expiry %v (%v); want the granted %s", st.IdentityTokensExpire, err, issued.Add(granted))
	}
	now = issued.Add(granted/2 + time.Second)
	if res, err := r.Refresh(t.Context(), false); err != nil || !res.Refreshed {
		t.Errorf("past half the granted lifetime: Refresh() = %+v, %v; want refreshed", res, err)
	}
}

// TestRunChecksWhenTheGrantedTokensAreDue: a link proxy checking every 10
// minutes refreshes tokens the server grants for 4 seconds every 2
// seconds, not after they died.
func TestRunChecksWhenTheGrantedTokensAreDue(t *testing.T) {
	dir := t.TempDir()
	rec := TokenRecord{Path: filepath.Join(dir, identitiesDir, tokensDir, "compute-manager-project-default.token"),
		Plane: "project-default", Namespace: "default", Name: "compute-manager"}
	issued := time.Now().Truncate(time.Second)
	if err := writeToken(rec.Path, fakeJWT(issued, issued.Add(2*time.Second))); err != nil {
		t.Fatal(err)
	}
	if err := (&State{Version: stateVersion, Dir: dir, IdentityTokens: []TokenRecord{rec}, IdentityTokensExpire: issued.Add(time.Hour)}).write(); err != nil {
		t.Fatal(err)
	}
	var requests []time.Duration
	ctx, cancel := context.WithCancel(t.Context())
	refreshed := make(chan string, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		TokenRefresher{Dir: dir, TTL: time.Hour, request: shorteningServer(time.Now, 4*time.Second, &requests)}.Run(ctx, 10*time.Minute, func(format string, args ...any) {
			refreshed <- fmt.Sprintf(format, args...)
		})
	}()
	for i := range 2 {
		select {
		case msg := <-refreshed:
			if !strings.HasPrefix(msg, "refreshed 1 identity tokens") {
				t.Fatalf("the refresher says %q", msg)
			}
			t.Logf("refresh %d: %s", i+1, msg)
		case <-time.After(15 * time.Second):
			t.Fatalf("%d refreshes in 15 s of tokens granted for seconds; the refresher waits for its 10-minute interval", i)
		}
	}
	cancel()
	<-done
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

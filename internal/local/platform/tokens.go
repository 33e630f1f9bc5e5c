//go:build linux

package platform

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Token rotation. The overlay identity mode's kubeconfigs do not hold their
// ServiceAccount tokens: each names a token file (tokenFile), which client-go
// reads again when its cached copy is a minute old or the server answers
// 401. Rotating a token is writing a new one into its file: the running
// compute-managers and compute-quotas pick it up without a restart. The
// state records where each token comes from (TokenRecord), so any
// compute-local can mint them again: `compute-local up` against a running
// platform, and the link proxy of a detached platform (the one long-running
// compute-local process), which checks every TokenCheckInterval.

// tokenRefreshDivisor: the tokens are refreshed once 1/tokenRefreshDivisor
// of their real lifetime is left (half of it): the lifetime the API server
// granted, which may be shorter than the one asked for
// (--service-account-max-token-expiration, or an audience's own limit).
const tokenRefreshDivisor = 2

// TokenRefreshBefore is how long before the tokens expire they are
// refreshed when the API server grants the IdentityTokenTTL asked for: half
// their lifetime. A server granting less has them refreshed at half the
// lifetime it granted (refreshDue).
const TokenRefreshBefore = IdentityTokenTTL / tokenRefreshDivisor

// TokenCheckInterval is how often the link proxy of a detached platform
// checks whether the tokens are due.
const TokenCheckInterval = 10 * time.Minute

// tokensDir holds the token files, under identitiesDir.
const tokensDir = "tokens"

// TokenRecord is where one token file's token comes from: a ServiceAccount
// of a plane.
type TokenRecord struct {
	// Path is the token file the kubeconfigs name.
	Path string `json:"path"`
	// Plane is the plane whose ServiceAccount it is.
	Plane string `json:"plane"`
	// Namespace and Name are the ServiceAccount's.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// tokenMinter mints a token of a plane's ServiceAccount valid for ttl.
type tokenMinter func(ctx context.Context, plane, namespace, name string, ttl time.Duration) (string, error)

// tokenRequester requests a token of a plane's ServiceAccount valid for
// ttl and returns the TokenRequest's status: the token and the expiry the
// server grants (which may come before ttl is over).
type tokenRequester func(ctx context.Context, plane, namespace, name string, ttl time.Duration) (authenticationv1.TokenRequestStatus, error)

// requestToken is a tokenRequester through a plane's admin configuration.
func requestToken(ctx context.Context, cfg *rest.Config, plane, namespace, name string, ttl time.Duration) (authenticationv1.TokenRequestStatus, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return authenticationv1.TokenRequestStatus{}, err
	}
	seconds := int64(ttl / time.Second)
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds},
	}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.TokenRequestStatus{}, fmt.Errorf("TokenRequest for ServiceAccount %s/%s in %s: %w", namespace, name, plane, err)
	}
	return tr.Status, nil
}

// mintToken is a tokenMinter through a plane's admin configuration.
func mintToken(ctx context.Context, cfg *rest.Config, plane, namespace, name string, ttl time.Duration) (string, error) {
	status, err := requestToken(ctx, cfg, plane, namespace, name, ttl)
	return status.Token, err
}

// tokenExpiry is when a token requested at requested for ttl expires: when
// the server says (status.expirationTimestamp), or, when it says nothing,
// once ttl is over.
func tokenExpiry(requested time.Time, status authenticationv1.TokenRequestStatus, ttl time.Duration) time.Time {
	if !status.ExpirationTimestamp.IsZero() {
		return status.ExpirationTimestamp.Time
	}
	return requested.Add(ttl)
}

// refreshDue is when tokens issued at issued and expiring at expire are
// to be refreshed: when 1/tokenRefreshDivisor of their real lifetime is
// left.
func refreshDue(issued, expire time.Time) time.Time {
	return expire.Add(-expire.Sub(issued) / tokenRefreshDivisor)
}

// writeToken replaces a token file at once (a reader sees the old token or
// the new one, never a part).
func writeToken(path, token string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("failed to create %s: %w", filepath.Dir(path), err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(token), 0o600); err != nil {
		return fmt.Errorf("failed to write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	return nil
}

// mintAll mints every recorded token and writes it into its file.
func mintAll(ctx context.Context, records []TokenRecord, mint tokenMinter, ttl time.Duration) error {
	_, err := requestAll(ctx, records, func(ctx context.Context, plane, namespace, name string, ttl time.Duration) (authenticationv1.TokenRequestStatus, error) {
		token, err := mint(ctx, plane, namespace, name, ttl)
		return authenticationv1.TokenRequestStatus{Token: token}, err
	}, ttl, time.Now)
	return err
}

// requestAll requests every recorded token, writes it into its file and
// returns when the first of them expires, as the server reports it
// (tokenExpiry).
func requestAll(ctx context.Context, records []TokenRecord, request tokenRequester, ttl time.Duration, now func() time.Time) (time.Time, error) {
	var first time.Time
	for _, r := range records {
		asked := now()
		status, err := request(ctx, r.Plane, r.Namespace, r.Name, ttl)
		if err != nil {
			return time.Time{}, err
		}
		if err := writeToken(r.Path, status.Token); err != nil {
			return time.Time{}, err
		}
		if expire := tokenExpiry(asked, status, ttl); first.IsZero() || expire.Before(first) {
			first = expire
		}
	}
	return first, nil
}

// tokenFileLifetime reads, from the claims of the JWT in a token file, when
// it was issued (iat) and when it expires (exp); ok is false when the file
// holds no such token. It tells the lifetime of tokens minted by another
// process, which recorded no more than their expiry.
func tokenFileLifetime(path string) (issued, expire time.Time, ok bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, time.Time{}, false
	}
	parts := strings.Split(strings.TrimSpace(string(data)), ".")
	if len(parts) != 3 {
		return time.Time{}, time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, time.Time{}, false
	}
	var claims struct {
		IssuedAt  int64 `json:"iat"`
		ExpiresAt int64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.IssuedAt <= 0 || claims.ExpiresAt <= claims.IssuedAt {
		return time.Time{}, time.Time{}, false
	}
	return time.Unix(claims.IssuedAt, 0), time.Unix(claims.ExpiresAt, 0), true
}

// schedule is when the recorded tokens expire and when they are due: with
// a fixed before, that long before the recorded expiry; otherwise at
// refreshDue of the token files' real lifetime (the earliest), or, when a
// file holds no readable token, TokenRefreshBefore before the recorded
// expiry.
func (r TokenRefresher) schedule(st *State) (expire, due time.Time) {
	expire = st.IdentityTokensExpire
	if r.Before > 0 {
		return expire, expire.Add(-r.Before)
	}
	var first, firstDue time.Time
	for _, rec := range st.IdentityTokens {
		issued, exp, ok := tokenFileLifetime(rec.Path)
		if !ok {
			return expire, expire.Add(-TokenRefreshBefore)
		}
		if first.IsZero() || exp.Before(first) {
			first = exp
		}
		if d := refreshDue(issued, exp); firstDue.IsZero() || d.Before(firstDue) {
			firstDue = d
		}
	}
	if first.IsZero() {
		return expire, expire.Add(-TokenRefreshBefore)
	}
	return first, firstDue
}

// TokenRefresher refreshes the identity tokens of a platform recorded in a
// state directory before they expire.
type TokenRefresher struct {
	// Dir is the state directory.
	Dir string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Before is how long before expiry the tokens are refreshed; zero
	// means when half their real lifetime (the one the server granted) is
	// left: TokenRefreshBefore when it granted the TTL asked for.
	Before time.Duration
	// TTL is how long new tokens are asked to last; zero means
	// IdentityTokenTTL. The server may grant less.
	TTL time.Duration
	// request requests a token; nil requests through the planes' admin
	// kubeconfigs of the state.
	request tokenRequester
}

// TokenRefresh is what a refresh did.
type TokenRefresh struct {
	// Refreshed reports that the tokens were minted again.
	Refreshed bool
	// Tokens counts the token files.
	Tokens int
	// Expire is when the tokens (now) expire, as the server granted them;
	// zero when the platform has no rotatable tokens (the admin identity
	// mode, or a platform started by a compute-local whose kubeconfigs
	// hold their tokens).
	Expire time.Time
	// Due is when they are to be refreshed next; zero with Expire.
	Due time.Time
}

// Refresh mints every identity token of the platform again when they are
// due (always with force), holding the state directory's lock, and records
// the new expiry, the one the server reports. It also corrects a recorded
// expiry the token files contradict (the server granted less than was
// asked for), so `compute-local status` tells the truth.
func (r TokenRefresher) Refresh(ctx context.Context, force bool) (TokenRefresh, error) {
	now, ttl := time.Now, r.TTL
	if r.Now != nil {
		now = r.Now
	}
	if ttl <= 0 {
		ttl = IdentityTokenTTL
	}
	unlock, err := lockDir(r.Dir, true)
	if err != nil {
		return TokenRefresh{}, err
	}
	defer unlock()
	st, err := ReadState(r.Dir)
	if err != nil {
		return TokenRefresh{}, err
	}
	out := TokenRefresh{Tokens: len(st.IdentityTokens)}
	if len(st.IdentityTokens) == 0 {
		return out, nil
	}
	out.Expire, out.Due = r.schedule(st)
	began := now()
	if !force && began.Before(out.Due) {
		if !out.Expire.Equal(st.IdentityTokensExpire) {
			st.IdentityTokensExpire = out.Expire
			if err := st.write(); err != nil {
				return out, err
			}
		}
		return out, nil
	}
	request := r.request
	if request == nil {
		request = st.requestThroughAdmin
	}
	expire, err := requestAll(ctx, st.IdentityTokens, request, ttl, now)
	if err != nil {
		return out, err
	}
	st.IdentityTokensExpire = expire
	if err := st.write(); err != nil {
		return out, err
	}
	due := refreshDue(began, expire)
	if r.Before > 0 {
		due = expire.Add(-r.Before)
	}
	out.Refreshed, out.Expire, out.Due = true, expire, due
	return out, nil
}

// Run checks until ctx ends, refreshing the tokens when they are due; it
// reports what it did (or failed to do) through log. It checks every
// interval, and sooner when the tokens are due sooner (a server granting
// a short lifetime).
func (r TokenRefresher) Run(ctx context.Context, interval time.Duration, log func(format string, args ...any)) {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	// The first check: when the tokens recorded now are due, at the latest
	// after interval.
	wait := interval
	if st, err := ReadState(r.Dir); err == nil && len(st.IdentityTokens) > 0 {
		_, due := r.schedule(st)
		wait = nextCheck(interval, due.Sub(now()))
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		res, err := r.Refresh(ctx, false)
		switch {
		case errors.Is(err, ErrNotRunning):
			return
		case err != nil:
			log("refreshing the identity tokens failed (retrying in %s): %v", interval, err)
			t.Reset(interval)
			continue
		case res.Refreshed:
			log("refreshed %d identity tokens; valid until %s", res.Tokens, res.Expire.Format(time.RFC3339))
		}
		wait := interval
		if !res.Due.IsZero() {
			wait = nextCheck(interval, res.Due.Sub(now()))
		}
		t.Reset(wait)
	}
}

// nextCheck is how long to wait for the next check: interval, or until the
// tokens are due when that comes sooner (and a second at least).
func nextCheck(interval, untilDue time.Duration) time.Duration {
	return max(min(interval, untilDue), time.Second)
}

// requestThroughAdmin requests a token with the admin kubeconfig of the
// plane the state records.
func (s *State) requestThroughAdmin(ctx context.Context, plane, namespace, name string, ttl time.Duration) (authenticationv1.TokenRequestStatus, error) {
	rec, err := s.Plane(plane)
	if err != nil {
		return authenticationv1.TokenRequestStatus{}, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", rec.Kubeconfig)
	if err != nil {
		return authenticationv1.TokenRequestStatus{}, fmt.Errorf("failed to read the admin kubeconfig of %s: %w", plane, err)
	}
	return requestToken(ctx, cfg, plane, namespace, name, ttl)
}

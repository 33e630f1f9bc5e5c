package platform

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// TokenRefreshBefore is how long before the tokens expire they are
// refreshed: half their lifetime.
const TokenRefreshBefore = IdentityTokenTTL / 2

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

// mintToken is a tokenMinter through a plane's admin configuration.
func mintToken(ctx context.Context, cfg *rest.Config, plane, namespace, name string, ttl time.Duration) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	seconds := int64(ttl / time.Second)
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("TokenRequest for ServiceAccount %s/%s in %s: %w", namespace, name, plane, err)
	}
	return tr.Status.Token, nil
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
	for _, r := range records {
		token, err := mint(ctx, r.Plane, r.Namespace, r.Name, ttl)
		if err != nil {
			return err
		}
		if err := writeToken(r.Path, token); err != nil {
			return err
		}
	}
	return nil
}

// TokenRefresher refreshes the identity tokens of a platform recorded in a
// state directory before they expire.
type TokenRefresher struct {
	// Dir is the state directory.
	Dir string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Before is how long before expiry the tokens are refreshed; zero
	// means TokenRefreshBefore.
	Before time.Duration
	// TTL is how long new tokens last; zero means IdentityTokenTTL.
	TTL time.Duration
	// mint mints a token; nil mints through the planes' admin
	// kubeconfigs of the state.
	mint tokenMinter
}

// TokenRefresh is what a refresh did.
type TokenRefresh struct {
	// Refreshed reports that the tokens were minted again.
	Refreshed bool
	// Tokens counts the token files.
	Tokens int
	// Expire is when the tokens (now) expire; zero when the platform has
	// no rotatable tokens (the admin identity mode, or a platform started
	// by a compute-local whose kubeconfigs hold their tokens).
	Expire time.Time
}

// Refresh mints every identity token of the platform again when they expire
// within Before (always with force), holding the state directory's lock,
// and records the new expiry.
func (r TokenRefresher) Refresh(ctx context.Context, force bool) (TokenRefresh, error) {
	now, before, ttl := time.Now, r.Before, r.TTL
	if r.Now != nil {
		now = r.Now
	}
	if before <= 0 {
		before = TokenRefreshBefore
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
	out.Expire = st.IdentityTokensExpire
	began := now()
	if !force && st.IdentityTokensExpire.Sub(began) > before {
		return out, nil
	}
	mint := r.mint
	if mint == nil {
		mint = st.mintThroughAdmin
	}
	if err := mintAll(ctx, st.IdentityTokens, mint, ttl); err != nil {
		return out, err
	}
	st.IdentityTokensExpire = began.Add(ttl)
	if err := st.write(); err != nil {
		return out, err
	}
	out.Refreshed, out.Expire = true, st.IdentityTokensExpire
	return out, nil
}

// Run checks every interval until ctx ends, refreshing the tokens when they
// are due; it reports what it did (or failed to do) through log.
func (r TokenRefresher) Run(ctx context.Context, interval time.Duration, log func(format string, args ...any)) {
	t := time.NewTicker(interval)
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
		case res.Refreshed:
			log("refreshed %d identity tokens; valid until %s", res.Tokens, res.Expire.Format(time.RFC3339))
		}
	}
}

// mintThroughAdmin mints a token with the admin kubeconfig of the plane
// the state records.
func (s *State) mintThroughAdmin(ctx context.Context, plane, namespace, name string, ttl time.Duration) (string, error) {
	rec, err := s.Plane(plane)
	if err != nil {
		return "", err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", rec.Kubeconfig)
	if err != nil {
		return "", fmt.Errorf("failed to read the admin kubeconfig of %s: %w", plane, err)
	}
	return mintToken(ctx, cfg, plane, namespace, name, ttl)
}

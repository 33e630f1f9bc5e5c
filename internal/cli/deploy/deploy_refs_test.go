package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	computev1alpha "github.com/citycells/compute/api/v1alpha"
	"github.com/citycells/compute/internal/catalog"
	"github.com/citycells/compute/internal/cli/cmdutil"
	"github.com/citycells/compute/test/clitest"
)

func TestParseEnvFrom(t *testing.T) {
	for name, tc := range map[string]struct {
		kind, in string
		want     EnvChange
		wantErr  string
	}{
		"a Secret key": {kind: KindSecret, in: "DB_PASSWORD=db:password",
			want: EnvChange{Name: "DB_PASSWORD", Source: &EnvSource{Kind: KindSecret, Name: "db", Key: "password"}}},
		"a ConfigMap key with dots": {kind: KindConfigMap, in: "LOG=app.config:log.level",
			want: EnvChange{Name: "LOG", Source: &EnvSource{Kind: KindConfigMap, Name: "app.config", Key: "log.level"}}},
		"no key":               {kind: KindSecret, in: "A=db", wantErr: `--env-from-secret "A=db": use NAME=SECRET:KEY`},
		"no name":              {kind: KindConfigMap, in: "=cm:k", wantErr: `--env-from-configmap "=cm:k": use NAME=CONFIGMAP:KEY`},
		"a removal is --env's": {kind: KindSecret, in: "A-", wantErr: "remove a variable with --env NAME-"},
		"an invalid object":    {kind: KindSecret, in: "A=DB:k", wantErr: `Secret name "DB" is not valid`},
		"an invalid key":       {kind: KindSecret, in: "A=db:a/b", wantErr: `key "a/b" is not valid`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ParseEnvFrom(tc.kind, tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseEnvAll(t *testing.T) {
	for name, tc := range map[string]struct {
		kind, in string
		want     EnvAllChange
		wantErr  string
	}{
		"a ConfigMap":               {kind: KindConfigMap, in: "web", want: EnvAllChange{Kind: KindConfigMap, Name: "web"}},
		"a Secret with a prefix":    {kind: KindSecret, in: "db:DB_", want: EnvAllChange{Kind: KindSecret, Name: "db", Prefix: "DB_"}},
		"a removal":                 {kind: KindSecret, in: "db-", want: EnvAllChange{Kind: KindSecret, Name: "db", Remove: true}},
		"a name ending in a dash":   {kind: KindConfigMap, in: "web-:W_", wantErr: `ConfigMap name "web-" is not valid`},
		"an empty prefix":           {kind: KindConfigMap, in: "web:", wantErr: `--env-from-configmap-all "web:": use CONFIGMAP or CONFIGMAP:PREFIX`},
		"no object":                 {kind: KindSecret, in: ":X_", wantErr: `--env-from-secret-all ":X_": use SECRET or SECRET:PREFIX`},
		"a prefix that is no ident": {kind: KindSecret, in: "db:1-X", wantErr: `prefix "1-X" is not valid`},
		"an invalid object":         {kind: KindSecret, in: "DB", wantErr: `Secret name "DB" is not valid`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ParseEnvAll(tc.kind, tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseMount(t *testing.T) {
	for name, tc := range map[string]struct {
		kind, in string
		want     Mount
		wantErr  string
	}{
		"a Secret at a path":        {kind: KindSecret, in: "db:/etc/db", want: Mount{Kind: KindSecret, Name: "db", Path: "/etc/db"}},
		"the path is cleaned":       {kind: KindConfigMap, in: "web:/etc/web/", want: Mount{Kind: KindConfigMap, Name: "web", Path: "/etc/web"}},
		"a path may hold colons":    {kind: KindSecret, in: "db:/a:b", want: Mount{Kind: KindSecret, Name: "db", Path: "/a:b"}},
		"NAME- removes":             {kind: KindSecret, in: "db-", want: Mount{Kind: KindSecret, Name: "db", Remove: true}},
		"a relative path":           {kind: KindSecret, in: "db:etc/db", wantErr: `the mount path "etc/db" must be absolute`},
		"no path":                   {kind: KindConfigMap, in: "web", wantErr: `--mount-configmap "web": use CONFIGMAP:PATH`},
		"an empty path":             {kind: KindSecret, in: "db:", wantErr: "use SECRET:PATH"},
		"an invalid name":           {kind: KindSecret, in: "Db:/x", wantErr: `Secret name "Db" is not valid`},
		"an invalid name to remove": {kind: KindConfigMap, in: "W_b-", wantErr: `ConfigMap name "W_b" is not valid`},
		"a lone dash":               {kind: KindSecret, in: "-", wantErr: "use SECRET:PATH"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ParseMount(tc.kind, tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParsePullSecret(t *testing.T) {
	for in, tc := range map[string]struct {
		want    PullSecretChange
		wantErr bool
	}{
		"regcred":        {want: PullSecretChange{Name: "regcred"}},
		"regcred-":       {want: PullSecretChange{Name: "regcred", Remove: true}},
		"ghcr.io-creds":  {want: PullSecretChange{Name: "ghcr.io-creds"}},
		"-":              {wantErr: true},
		"":               {wantErr: true},
		"Reg_Cred":       {wantErr: true},
		"regcred:/etc/x": {wantErr: true},
	} {
		t.Run(in, func(t *testing.T) {
			got, err := ParsePullSecret(in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "--pull-secret ") {
				t.Errorf("error %q does not name the flag", err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestVolumeNamesAreDNSLabelsNamedAfterTheObject(t *testing.T) {
	long := strings.Repeat("a", 60)
	for name, tc := range map[string]struct {
		kind, object, want string
	}{
		"a short Secret":              {KindSecret, "db", "secret-db"},
		"a short ConfigMap":           {KindConfigMap, "web-config", "configmap-web-config"},
		"dots are hashed":             {KindSecret, "db.prod", "secret-db-prod-" + VolumeName(KindSecret, "db.prod")[len("secret-db-prod-"):]},
		"a long name is shortened":    {KindSecret, long, "secret-" + long[:45] + "-" + VolumeName(KindSecret, long)[53:]},
		"the longest that fits stays": {KindSecret, long[:56], "secret-" + long[:56]},
	} {
		t.Run(name, func(t *testing.T) {
			got := VolumeName(tc.kind, tc.object)
			if got != tc.want {
				t.Errorf("VolumeName(%s, %s) = %q, want %q", tc.kind, tc.object, got, tc.want)
			}
			if msgs := utilvalidation.IsDNS1123Label(got); len(msgs) > 0 {
				t.Errorf("VolumeName(%s, %s) = %q is not a DNS label: %v", tc.kind, tc.object, got, msgs)
			}
			if again := VolumeName(tc.kind, tc.object); again != got {
				t.Errorf("VolumeName is not deterministic: %q then %q", got, again)
			}
		})
	}
	if VolumeName(KindSecret, "db.prod") == VolumeName(KindSecret, "db-prod") {
		t.Error("db.prod and db-prod must get different volumes")
	}
	if VolumeName(KindSecret, long+"x") == VolumeName(KindSecret, long+"y") {
		t.Error("long names that differ at the end must get different volumes")
	}
}

// secretEnv is a variable read from key of Secret name.
func secretEnv(env, name, key string) computev1alpha.EnvVar {
	return computev1alpha.EnvVar{Name: env, ValueFrom: &computev1alpha.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}}
}

// configMapEnv is a variable read from key of ConfigMap name.
func configMapEnv(env, name, key string) computev1alpha.EnvVar {
	return computev1alpha.EnvVar{Name: env, ValueFrom: &computev1alpha.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}}
}

// mount attaches volume at path.
func mount(volume, path string) computev1alpha.VolumeAttachment {
	return computev1alpha.VolumeAttachment{Name: volume, MountPath: ptr.To(path)}
}

// withRefs is a workload reading DB_PASSWORD from Secret db, with Secret db
// mounted at /etc/db, ConfigMap web at /etc/web, and pull secret regcred.
func withRefs() *computev1alpha.Workload {
	w := clitest.NewWorkload("web").Env("MODE", "prod").Build()
	spec := &w.Spec.Template.Spec
	spec.Volumes = []computev1alpha.InstanceVolume{newVolume("secret-db", KindSecret, "db"), newVolume("configmap-web", KindConfigMap, "web")}
	sb := spec.Runtime.Sandbox
	sb.ImagePullSecrets = []computev1alpha.LocalSecretReference{{Name: "regcred"}}
	c := &sb.Containers[0]
	c.Env = append(c.Env, secretEnv("DB_PASSWORD", "db", "password"))
	c.VolumeAttachments = []computev1alpha.VolumeAttachment{mount("secret-db", "/etc/db"), mount("configmap-web", "/etc/web")}
	return w
}

// refCase is a deploy command line and the template it builds.
type refCase struct {
	args     []string
	existing *computev1alpha.Workload
	// want changes the expected spec: the existing one, or the plain new
	// workload the flags describe.
	want    func(spec *computev1alpha.InstanceSpec, c *computev1alpha.SandboxContainer)
	wantErr string
}

// refCases are the cases of TestReferenceFlagsBuildTheTemplate.
func refCases() map[string]refCase {
	return map[string]refCase{
		"a new workload reads keys, mounts objects and pulls with a secret": {
			args: []string{"web", "--image", "ghcr.io/acme/web:1.0", "--city", "DFW,LHR", "--min", "2", "--port", "http:8080",
				"--env-from-secret", "DB_PASSWORD=db:password", "--env-from-configmap", "LOG_LEVEL=web:log-level",
				"--mount-secret", "db:/etc/db", "--mount-configmap", "web:/etc/web", "--pull-secret", "regcred"},
			want: func(spec *computev1alpha.InstanceSpec, c *computev1alpha.SandboxContainer) {
				c.Env = []computev1alpha.EnvVar{secretEnv("DB_PASSWORD", "db", "password"), configMapEnv("LOG_LEVEL", "web", "log-level")}
				spec.Volumes = []computev1alpha.InstanceVolume{newVolume("secret-db", KindSecret, "db"), newVolume("configmap-web", KindConfigMap, "web")}
				c.VolumeAttachments = []computev1alpha.VolumeAttachment{mount("secret-db", "/etc/db"), mount("configmap-web", "/etc/web")}
				spec.Runtime.Sandbox.ImagePullSecrets = []computev1alpha.LocalSecretReference{{Name: "regcred"}}
			},
		},
		"an update adds references and keeps the rest": {
			args:     []string{"web", "--env-from-secret", "API_KEY=api:key", "--mount-secret", "tls:/etc/tls", "--pull-secret", "ghcr"},
			existing: withRefs(),
			want: func(spec *computev1alpha.InstanceSpec, c *computev1alpha.SandboxContainer) {
				c.Env = append(c.Env, secretEnv("API_KEY", "api", "key"))
				spec.Volumes = append(spec.Volumes, newVolume("secret-tls", KindSecret, "tls"))
				c.VolumeAttachments = append(c.VolumeAttachments, mount("secret-tls", "/etc/tls"))
				spec.Runtime.Sandbox.ImagePullSecrets = append(spec.Runtime.Sandbox.ImagePullSecrets, computev1alpha.LocalSecretReference{Name: "ghcr"})
			},
		},
		"NAME- removes a mount with its volume, a pull secret and (through --env) a variable": {
			args:     []string{"web", "--mount-secret", "db-", "--pull-secret", "regcred-", "--env", "DB_PASSWORD-"},
			existing: withRefs(),
			want: func(spec *computev1alpha.InstanceSpec, c *computev1alpha.SandboxContainer) {
				c.Env = c.Env[:1]
				spec.Volumes = spec.Volumes[1:]
				c.VolumeAttachments = c.VolumeAttachments[1:]
				spec.Runtime.Sandbox.ImagePullSecrets = nil
			},
		},
		"removing what is not there changes nothing": {
			args:     []string{"web", "--mount-configmap", "other-", "--pull-secret", "other-"},
			existing: withRefs(),
			want:     func(*computev1alpha.InstanceSpec, *computev1alpha.SandboxContainer) {},
		},
		"a new path moves the mount; a key replaces a literal value": {
			args:     []string{"web", "--mount-configmap", "web:/srv/config", "--env-from-configmap", "MODE=web:mode"},
			existing: withRefs(),
			want: func(_ *computev1alpha.InstanceSpec, c *computev1alpha.SandboxContainer) {
				c.VolumeAttachments[1] = mount("configmap-web", "/srv/config")
				c.Env[0] = configMapEnv("MODE", "web", "mode")
			},
		},
		"a new workload reads whole objects as environment": {
			args: []string{"web", "--image", "ghcr.io/acme/web:1.0", "--city", "DFW,LHR", "--min", "2", "--port", "http:8080",
				"--env-from-configmap-all", "web", "--env-from-secret-all", "db:DB_"},
			want: func(_ *computev1alpha.InstanceSpec, c *computev1alpha.SandboxContainer) {
				c.EnvFrom = []computev1alpha.EnvFromSource{
					{Prefix: "DB_", SecretRef: &computev1alpha.SecretEnvSource{Name: "db"}},
					{ConfigMapRef: &computev1alpha.ConfigMapEnvSource{Name: "web"}},
				}
			},
		},
		"an update changes a prefix, adds a source and removes one, keeping the rest": {
			args: []string{"web", "--env-from-configmap-all", "web:WEB_", "--env-from-secret-all", "api", "--env-from-secret-all", "db-"},
			existing: func() *computev1alpha.Workload {
				w := withRefs()
				w.Spec.Template.Spec.Runtime.Sandbox.Containers[0].EnvFrom = []computev1alpha.EnvFromSource{
					{SecretRef: &computev1alpha.SecretEnvSource{Name: "db"}}, {ConfigMapRef: &computev1alpha.ConfigMapEnvSource{Name: "web"}},
				}
				return w
			}(),
			want: func(_ *computev1alpha.InstanceSpec, c *computev1alpha.SandboxContainer) {
				c.EnvFrom = []computev1alpha.EnvFromSource{
					{Prefix: "WEB_", ConfigMapRef: &computev1alpha.ConfigMapEnvSource{Name: "web"}},
					{SecretRef: &computev1alpha.SecretEnvSource{Name: "api"}},
				}
			},
		},
		"an update that does not name envFrom keeps it and the security context": {
			args: []string{"web", "--image", "ghcr.io/acme/web:2.0"},
			existing: func() *computev1alpha.Workload {
				w := withRefs()
				c := &w.Spec.Template.Spec.Runtime.Sandbox.Containers[0]
				c.EnvFrom = []computev1alpha.EnvFromSource{{SecretRef: &computev1alpha.SecretEnvSource{Name: "db"}}}
				c.SecurityContext = &computev1alpha.SecurityContext{AllowPrivilegeEscalation: ptr.To(false)}
				return w
			}(),
			want: func(_ *computev1alpha.InstanceSpec, c *computev1alpha.SandboxContainer) {
				c.Image = "ghcr.io/acme/web:2.0"
			},
		},
		"a path another volume is mounted at": {
			args: []string{"web", "--mount-secret", "tls:/etc/db"}, existing: withRefs(),
			wantErr: "--mount-secret tls:/etc/db: volume secret-db is mounted at /etc/db already",
		},
		"a volume of that name that holds something else": {
			args: []string{"web", "--mount-configmap", "db:/etc/x"},
			existing: func() *computev1alpha.Workload {
				w := withRefs()
				w.Spec.Template.Spec.Volumes[0].Name = "configmap-db"
				return w
			}(),
			wantErr: "volume configmap-db exists and holds something else",
		},
	}
}

func TestReferenceFlagsBuildTheTemplate(t *testing.T) {
	for name, tc := range refCases() {
		t.Run(name, func(t *testing.T) {
			o, err := parse(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			want := clitest.NewWorkload("web").Build()
			want.Spec.RevisionHistoryLimit = nil
			want.Spec.Placements[0].ScaleSettings.InstanceManagementPolicy = ""
			// deploy stamps the catalog's default type, by its object name.
			want.Spec.Template.Spec.Runtime.Resources.InstanceType = catalog.DefaultInstanceType
			var existing *computev1alpha.Workload
			if tc.existing != nil {
				existing, want = tc.existing.DeepCopy(), tc.existing.DeepCopy()
			}
			got, err := o.desired(existing, "default")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || cmdutil.ExitCode(err) != cmdutil.ExitUsage {
					t.Fatalf("got %v, want a usage error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			spec := &want.Spec.Template.Spec
			tc.want(spec, &spec.Runtime.Sandbox.Containers[0])
			if diff := cmp.Diff(want.Spec, got.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReferenceFlagsAreUsageErrorsWhenMalformed(t *testing.T) {
	manifest := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(manifest, []byte(manifestYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"an env-from without a key":   {[]string{"web", "--env-from-secret", "A=db"}, `--env-from-secret "A=db": use NAME=SECRET:KEY`},
		"a variable with two sources": {[]string{"web", "--env", "A=1", "--env-from-configmap", "A=cm:a"}, "give each variable one source"},
		"a removal and a new source":  {[]string{"web", "--env", "A-", "--env-from-secret", "A=db:a"}, "give each variable one source"},
		"a relative mount path":       {[]string{"web", "--mount-secret", "db:etc"}, "must be absolute"},
		"a bad pull secret":           {[]string{"web", "--pull-secret", "Reg"}, `--pull-secret "Reg"`},
		"a bad env-from-secret-all":   {[]string{"web", "--env-from-secret-all", "db:a-b"}, `--env-from-secret-all "db:a-b": prefix`},
		"a manifest and a mount":      {[]string{"-f", manifest, "--mount-configmap", "web:/etc/web"}, "-f cannot be combined with --mount-configmap"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parse(t, tc.args...)
			if cmdutil.ExitCode(err) != cmdutil.ExitUsage || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v (exit %d), want a usage error containing %q", err, cmdutil.ExitCode(err), tc.want)
			}
		})
	}
}

func TestValidationErrorsNameTheReferenceFlag(t *testing.T) {
	ctr := field.NewPath("spec", "template", "spec", "runtime", "sandbox", "containers").Index(0)
	vols := field.NewPath("spec", "template", "spec", "volumes")
	for path, want := range map[*field.Path]string{
		ctr.Child("env").Index(1).Child("valueFrom", "secretKeyRef", "name"):                "--env-from-secret",
		ctr.Child("env").Index(1).Child("valueFrom", "configMapKeyRef", "key"):              "--env-from-configmap",
		ctr.Child("env").Index(1).Child("name"):                                             "--env",
		ctr.Child("envFrom").Index(0).Child("secretRef", "name"):                            "--env-from-secret-all",
		ctr.Child("envFrom").Index(0).Child("configMapRef", "name"):                         "--env-from-configmap-all",
		vols.Index(0).Child("secret", "secretName"):                                         "--mount-secret",
		vols.Index(0).Child("configMap", "name"):                                            "--mount-configmap",
		field.NewPath("spec", "template", "spec", "runtime", "sandbox", "imagePullSecrets"): "--pull-secret",
		ctr.Child("image"): "--image",
	} {
		if got := flagOf(path.String()); got != want {
			t.Errorf("flagOf(%s) = %q, want %q", path, got, want)
		}
	}
}

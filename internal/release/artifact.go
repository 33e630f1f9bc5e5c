package release

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The OCI empty descriptor's content and media type: an artifact's config
// when it has nothing to configure (OCI image spec 1.1, "Guidelines for
// artifact usage").
const (
	emptyMediaType types.MediaType = "application/vnd.oci.empty.v1+json"
	emptyJSON      string          = "{}"
)

// artifactManifest is an OCI 1.1 image manifest carrying one file as an
// artifact (artifactType = the file's media type) that refers to a subject.
type artifactManifest struct {
	SchemaVersion int64             `json:"schemaVersion"`
	MediaType     types.MediaType   `json:"mediaType"`
	ArtifactType  string            `json:"artifactType"`
	Config        v1.Descriptor     `json:"config"`
	Layers        []v1.Descriptor   `json:"layers"`
	Subject       *v1.Descriptor    `json:"subject,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// rawArtifact is the manifest remote.Put writes.
type rawArtifact struct{ raw []byte }

func (a rawArtifact) RawManifest() ([]byte, error)        { return a.raw, nil }
func (a rawArtifact) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

// PushReferrer pushes data (of mediaType, file name title) to repo as an
// OCI artifact whose subject is subject, and returns its digest. Registries
// with the referrers API list it under the subject; for the others
// go-containerregistry also updates the fallback tag sha256-<subject hex>
// (the OCI 1.1 referrers tag schema), so `crane`, `oras discover` and
// `cosign download sbom`-style clients find it either way.
func PushReferrer(repo name.Repository, subject v1.Descriptor, mediaType types.MediaType, title string, data []byte, annotations map[string]string, opts ...remote.Option) (v1.Hash, error) {
	config := static.NewLayer([]byte(emptyJSON), emptyMediaType)
	layer := static.NewLayer(data, mediaType)
	descs := make([]v1.Descriptor, 0, 2)
	for _, l := range []v1.Layer{config, layer} {
		if err := remote.WriteLayer(repo, l, opts...); err != nil {
			return v1.Hash{}, fmt.Errorf("failed to push a blob of %s to %s: %w", title, repo, err)
		}
		d, err := l.Digest()
		if err != nil {
			return v1.Hash{}, err
		}
		size, err := l.Size()
		if err != nil {
			return v1.Hash{}, err
		}
		mt, err := l.MediaType()
		if err != nil {
			return v1.Hash{}, err
		}
		descs = append(descs, v1.Descriptor{MediaType: mt, Digest: d, Size: size})
	}
	descs[0].Data = []byte(emptyJSON)
	descs[1].Annotations = map[string]string{"org.opencontainers.image.title": title}
	sub := subject
	sub.Platform, sub.Annotations, sub.Data, sub.URLs = nil, nil, nil, nil
	raw, err := json.Marshal(artifactManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  string(mediaType),
		Config:        descs[0],
		Layers:        descs[1:],
		Subject:       &sub,
		Annotations:   annotations,
	})
	if err != nil {
		return v1.Hash{}, err
	}
	digest, _, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return v1.Hash{}, err
	}
	if err := remote.Put(repo.Digest(digest.String()), rawArtifact{raw}, opts...); err != nil {
		return v1.Hash{}, fmt.Errorf("failed to push %s to %s: %w", title, repo, err)
	}
	return digest, nil
}

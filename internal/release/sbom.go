package release

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// SBOMMediaType is the media type of the SBOM documents: SPDX 2.3 JSON.
const SBOMMediaType = "application/spdx+json"

// SPDX 2.3 JSON, the fields compute writes.
type (
	// SPDXDocument is one SBOM: every binary of one image index.
	SPDXDocument struct {
		SPDXVersion       string             `json:"spdxVersion"`
		DataLicense       string             `json:"dataLicense"`
		SPDXID            string             `json:"SPDXID"`
		Name              string             `json:"name"`
		DocumentNamespace string             `json:"documentNamespace"`
		CreationInfo      SPDXCreationInfo   `json:"creationInfo"`
		Packages          []SPDXPackage      `json:"packages"`
		Relationships     []SPDXRelationship `json:"relationships"`
	}
	// SPDXCreationInfo says when and by what the document was made.
	SPDXCreationInfo struct {
		Created  string   `json:"created"`
		Creators []string `json:"creators"`
	}
	// SPDXPackage is a binary (one per platform), a Go module or the
	// standard library.
	SPDXPackage struct {
		Name             string            `json:"name"`
		SPDXID           string            `json:"SPDXID"`
		VersionInfo      string            `json:"versionInfo,omitempty"`
		DownloadLocation string            `json:"downloadLocation"`
		FilesAnalyzed    bool              `json:"filesAnalyzed"`
		PrimaryPurpose   string            `json:"primaryPackagePurpose,omitempty"`
		Checksums        []SPDXChecksum    `json:"checksums,omitempty"`
		ExternalRefs     []SPDXExternalRef `json:"externalRefs,omitempty"`
		Comment          string            `json:"comment,omitempty"`
		LicenseConcluded string            `json:"licenseConcluded"`
		LicenseDeclared  string            `json:"licenseDeclared"`
		CopyrightText    string            `json:"copyrightText"`
		SourceInfo       string            `json:"sourceInfo,omitempty"`
	}
	// SPDXChecksum is a package's checksum.
	SPDXChecksum struct {
		Algorithm     string `json:"algorithm"`
		ChecksumValue string `json:"checksumValue"`
	}
	// SPDXExternalRef is a package URL.
	SPDXExternalRef struct {
		ReferenceCategory string `json:"referenceCategory"`
		ReferenceType     string `json:"referenceType"`
		ReferenceLocator  string `json:"referenceLocator"`
	}
	// SPDXRelationship links two elements.
	SPDXRelationship struct {
		Element string `json:"spdxElementId"`
		Type    string `json:"relationshipType"`
		Related string `json:"relatedSpdxElement"`
	}
)

// BuiltBinary is one binary of an image index.
type BuiltBinary struct {
	// Path is the binary on disk.
	Path string
	// Platform it was built for.
	Platform v1.Platform
}

// SBOM writes the SPDX document of binary name at version from the build
// information Go records in each built binary (what `go version -m`
// prints): per platform, a package for the binary (with its SHA-256) that
// depends on the standard library of its Go toolchain and on every module
// it was linked from. index is the digest of the image index the binaries
// are in; created is the release's time.
func SBOM(name, version string, index v1.Hash, created time.Time, bins []BuiltBinary) (*SPDXDocument, error) {
	doc := &SPDXDocument{
		SPDXVersion:       "SPDX-2.3",
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              fmt.Sprintf("%s-%s", name, version),
		DocumentNamespace: fmt.Sprintf("%s/spdx/%s/%s/%s", SourceURL, name, version, index.Hex),
		CreationInfo: SPDXCreationInfo{
			Created:  created.UTC().Format(time.RFC3339),
			Creators: []string{"Tool: compute-release", "Organization: citycells"},
		},
	}
	seen := map[string]bool{}
	for _, b := range bins {
		info, err := buildinfo.ReadFile(b.Path)
		if err != nil {
			return nil, fmt.Errorf("failed to read the build information of %s (%s): %w", name, b.Platform.String(), err)
		}
		sum, err := fileSHA256(b.Path)
		if err != nil {
			return nil, err
		}
		plat := strings.ReplaceAll(b.Platform.String(), "/", "-")
		binID := "SPDXRef-Binary-" + spdxIDPart(name+"-"+plat)
		var settings []string
		for _, s := range info.Settings {
			settings = append(settings, s.Key+"="+s.Value)
		}
		doc.Packages = append(doc.Packages, SPDXPackage{
			Name:             name,
			SPDXID:           binID,
			VersionInfo:      version,
			DownloadLocation: SourceURL,
			PrimaryPurpose:   "APPLICATION",
			Checksums:        []SPDXChecksum{{Algorithm: "SHA256", ChecksumValue: sum}},
			ExternalRefs: []SPDXExternalRef{purl(fmt.Sprintf("pkg:golang/%s@%s?goos=%s&goarch=%s",
				info.Main.Path, version, b.Platform.OS, b.Platform.Architecture))},
			Comment:          fmt.Sprintf("/%s for %s, package %s, built with %s; build settings: %s", name, b.Platform.String(), info.Path, info.GoVersion, strings.Join(settings, " ")),
			LicenseConcluded: "NOASSERTION",
			LicenseDeclared:  "NOASSERTION",
			CopyrightText:    "NOASSERTION",
		})
		doc.Relationships = append(doc.Relationships, SPDXRelationship{"SPDXRef-DOCUMENT", "DESCRIBES", binID})

		deps := []SPDXPackage{goPackage("stdlib", info.GoVersion, "")}
		for _, m := range info.Deps {
			if m.Replace != nil {
				m = m.Replace
			}
			deps = append(deps, goPackage(m.Path, m.Version, m.Sum))
		}
		for _, p := range deps {
			if !seen[p.SPDXID] {
				seen[p.SPDXID] = true
				doc.Packages = append(doc.Packages, p)
			}
			doc.Relationships = append(doc.Relationships, SPDXRelationship{binID, "DEPENDS_ON", p.SPDXID})
		}
	}
	if len(bins) == 0 {
		return nil, fmt.Errorf("no binaries of %s to describe", name)
	}
	return doc, nil
}

// goPackage is a Go module (or the standard library) as an SPDX package.
func goPackage(path, version, sum string) SPDXPackage {
	p := SPDXPackage{
		Name:             path,
		SPDXID:           "SPDXRef-Package-" + spdxIDPart(path+"-"+version),
		VersionInfo:      version,
		DownloadLocation: "NOASSERTION",
		PrimaryPurpose:   "LIBRARY",
		ExternalRefs:     []SPDXExternalRef{purl(fmt.Sprintf("pkg:golang/%s@%s", path, version))},
		LicenseConcluded: "NOASSERTION",
		LicenseDeclared:  "NOASSERTION",
		CopyrightText:    "NOASSERTION",
	}
	if sum != "" {
		p.Comment = "go.sum hash " + sum
	}
	return p
}

func purl(locator string) SPDXExternalRef {
	return SPDXExternalRef{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl", ReferenceLocator: locator}
}

// spdxIDPart keeps the letters, digits, '.' and '-' SPDX identifiers allow.
func spdxIDPart(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '-'
	}, s)
}

func fileSHA256(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// JSON is the document, indented, with a trailing newline.
func (d *SPDXDocument) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Modules are the module paths the document names, sorted (tests, and a
// quick look at what a release links).
func (d *SPDXDocument) Modules() []string {
	var out []string
	for _, p := range d.Packages {
		if p.PrimaryPurpose == "LIBRARY" {
			out = append(out, p.Name)
		}
	}
	slices.Sort(out)
	return out
}

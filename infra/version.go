package infra

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// VersionTagKey is the tag naming the Ferry version on the stack and on
// every resource that takes tags (the functions, the table, the API, the
// roles...): the version the bootstraps report in `ferry version`, their
// cold-start log lines, EMF lines and /healthz.
const VersionTagKey = "ferry:version"

// VersionFile is the file beside the bootstraps, in AssetDir, where
// `make build` writes the version it stamped into them.
const VersionFile = "VERSION"

// UnknownVersion tags a stack whose assets carry no VersionFile (bootstraps
// built without make) and whose Props name no Version.
const UnknownVersion = "unknown"

// tagValueRE is what CloudFormation accepts as a tag value.
var tagValueRE = regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_.:/=+\-@]{1,256}$`)

// stackVersion is the version the stack is tagged with: Props.Version, else
// the VersionFile in assetDir, else UnknownVersion.
func stackVersion(p *Props, assetDir string) (string, error) {
	v := p.Version
	source := "Version"
	if v == "" {
		raw, err := os.ReadFile(filepath.Join(assetDir, VersionFile))
		switch {
		case errors.Is(err, os.ErrNotExist):
			return UnknownVersion, nil
		case err != nil:
			return "", fmt.Errorf("AssetDir (%s): %w", assetDir, err)
		}
		v, source = strings.TrimSpace(string(raw)), filepath.Join(assetDir, VersionFile)
	}
	if !tagValueRE.MatchString(v) {
		return "", fmt.Errorf("%s (%q) must be a tag value: 1 to 256 letters, digits, spaces or _.:/=+-@", source, v)
	}
	return v, nil
}

// stackTags returns the stack's own tags: tags (the caller's StackProps.Tags,
// left unchanged) and the version. They are set explicitly: under the
// feature flag @aws-cdk/core:explicitStackTags (cdk.json) Tags.Of does not
// reach the stack itself.
func stackTags(tags *map[string]*string, v string) *map[string]*string {
	out := map[string]*string{}
	if tags != nil {
		maps.Copy(out, *tags)
	}
	out[VersionTagKey] = jsii.String(v)
	return &out
}

// untaggedTypes are resource types the CDK would tag but CloudFormation
// does not take Tags for (cfn-lint E3002; TestCfnLint).
var untaggedTypes = []string{"AWS::CloudWatch::Dashboard"}

// tagResources tags every taggable resource of the stack (the functions, the
// table, the roles, the API...) with the version, in the template itself.
func (s *Stack) tagResources(v string) {
	awscdk.Tags_Of(s.Stack).Add(jsii.String(VersionTagKey), jsii.String(v), &awscdk.TagProps{
		ExcludeResourceTypes: jsii.Strings(untaggedTypes...),
	})
}

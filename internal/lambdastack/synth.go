package lambdastack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// cliContext is what the CDK CLI adds to an app's context by default:
// construct paths and asset paths in the template's metadata (ferry local
// names functions by their construct path; SAM finds assets by theirs).
var cliContext = map[string]any{
	"aws:cdk:enable-path-metadata":  true,
	"aws:cdk:enable-asset-metadata": true,
}

// Synth synthesizes the CDK app in infraDir into outDir offline, as `cdk
// synth` would (the app's command with CDK_OUTDIR and CDK_CONTEXT_JSON, the
// context of cdk.json merged with ferry, when given, under the "ferry"
// key), without the CDK command line: jsii needs only node.
func Synth(ctx context.Context, infraDir, outDir string, ferry map[string]any, out io.Writer) error {
	raw, err := os.ReadFile(filepath.Join(infraDir, "cdk.json"))
	if err != nil {
		return fmt.Errorf("synthesizing: %w", err)
	}
	var cdk struct {
		App     string         `json:"app"`
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(raw, &cdk); err != nil {
		return fmt.Errorf("synthesizing: cdk.json: %w", err)
	}
	cctx := map[string]any{}
	for k, v := range cdk.Context {
		cctx[k] = v
	}
	for k, v := range cliContext {
		cctx[k] = v
	}
	if ferry != nil {
		merged := map[string]any{}
		if base, ok := cctx["ferry"].(map[string]any); ok {
			for k, v := range base {
				merged[k] = v
			}
		}
		for k, v := range ferry {
			merged[k] = v
		}
		cctx["ferry"] = merged
	}
	ctxJSON, err := json.Marshal(cctx)
	if err != nil {
		return err
	}
	args := strings.Fields(cdk.App)
	if len(args) == 0 {
		return fmt.Errorf("synthesizing: cdk.json names no app")
	}
	abs, err := filepath.Abs(outDir)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = infraDir
	home, _ := filepath.Abs(filepath.Join(infraDir, ".cdk"))
	cmd.Env = append(os.Environ(),
		"CDK_OUTDIR="+abs, "CDK_CONTEXT_JSON="+string(ctxJSON),
		"CDK_HOME="+home, "CDK_DISABLE_CLI_TELEMETRY=true", "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("synthesizing %s (%s): %w", infraDir, cdk.App, err)
	}
	return nil
}

// AssemblyStale reports whether the cloud assembly in dir is missing or
// older than any source of the CDK app in infraDir (its Go files, go.mod,
// go.sum and cdk.json; node_modules, cdk.out and .cdk are not sources).
func AssemblyStale(infraDir, dir string) (bool, error) {
	st, err := os.Stat(filepath.Join(dir, "manifest.json"))
	if os.IsNotExist(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	built := st.ModTime()
	newest := time.Time{}
	abs, _ := filepath.Abs(dir)
	err = filepath.WalkDir(infraDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			p, _ := filepath.Abs(path)
			if name := d.Name(); path != infraDir && (name == "node_modules" || name == ".cdk" || name == "cdk.out" || strings.HasPrefix(name, ".") || p == abs) {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if strings.HasSuffix(name, ".go") || name == "go.mod" || name == "go.sum" || name == "cdk.json" {
			info, err := d.Info()
			if err != nil {
				return err
			}
			if info.ModTime().After(newest) {
				newest = info.ModTime()
			}
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	return newest.After(built), nil
}

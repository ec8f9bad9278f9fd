package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Functions are the Lambda functions, each a `bootstrap`.
var Functions = []string{"enqueue", "drainer", "reaper", "retention"}

// Bootstrap is one function's binary size and, when the emulator run
// worked, its first (cold) and second (warm) invoke times in ms.
type Bootstrap struct {
	Function       string
	SizeBytes      int64
	ColdMs, WarmMs float64 // 0 when not measured
	InitMs         float64 // the emulator's INIT REPORT, when the test prints it
}

// BootstrapSizes builds every function as `make build` and
// internal/emulatortest do (CGO off, -tags lambda.norpc, -trimpath, -s -w)
// and returns the sizes.
func BootstrapSizes(ctx context.Context, root string) ([]Bootstrap, error) {
	dir, err := os.MkdirTemp("", "ferry-bench-bootstrap")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var out []Bootstrap
	for _, f := range Functions {
		bin := filepath.Join(dir, f, "bootstrap")
		cmd := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./functions/"+f)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return out, fmt.Errorf("go build ./functions/%s: %w: %s", f, err, b)
		}
		st, err := os.Stat(bin)
		if err != nil {
			return out, err
		}
		out = append(out, Bootstrap{Function: f, SizeBytes: st.Size()})
	}
	return out, nil
}

// EmulatorTimes runs the runtime helper's emulator test
// (internal/emulatortest, `make lambda-local`) and reads the cold and warm
// invoke times it prints. rie is the aws-lambda-rie binary.
func EmulatorTimes(ctx context.Context, root, rie string, bs []Bootstrap) ([]Bootstrap, string, error) {
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-tags", "emulator", "-run", "TestFunctionsUnderTheEmulator", "-v", "./internal/emulatortest/")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "LAMBDA_RIE="+rie)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	raw := buf.String()
	got := 0
	sc := bufio.NewScanner(strings.NewReader(raw))
	for sc.Scan() {
		// Rows: function, size MB, cold ms, [init ms,] warm ms.
		f := strings.Fields(sc.Text())
		if len(f) != 4 && len(f) != 5 {
			continue
		}
		nums := make([]float64, 0, 4)
		for _, x := range f[1:] {
			v, err := strconv.ParseFloat(x, 64)
			if err != nil {
				break
			}
			nums = append(nums, v)
		}
		if len(nums) != len(f)-1 {
			continue
		}
		for i := range bs {
			if bs[i].Function != f[0] {
				continue
			}
			bs[i].ColdMs, bs[i].WarmMs = nums[1], nums[len(nums)-1]
			if len(nums) == 4 {
				bs[i].InitMs = nums[2]
			}
			got++
		}
	}
	if err != nil || got == 0 {
		tail := raw
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return bs, tail, fmt.Errorf("emulator run: %v (%d functions timed)", err, got)
	}
	return bs, "", nil
}

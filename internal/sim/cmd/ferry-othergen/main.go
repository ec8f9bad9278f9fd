// Command ferry-othergen writes another build's engine under
// internal/sim/otherbuild/ for the simulator to run beside this build's
// (design.md §15; package othergen):
//
//	go run ./internal/sim/cmd/ferry-othergen -ref v0.1.0   # the previous release's source
//	go run -tags otherbuild ./internal/sim/cmd/ferry-sim-other -seeds 2000 -steps 1000
//
// Without -ref it copies the working tree. The directory is ignored by git.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/ferryhq/ferry/internal/sim/othergen"
)

func main() {
	ref := flag.String("ref", "", "the git revision whose engine to copy (a release tag); empty: the working tree")
	toy := flag.String("toy", "", "apply a toy layout change to the copy (expand or fork; the harness's own test)")
	flag.Parse()
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ferry-othergen: run it inside the repository:", err)
		os.Exit(1)
	}
	p := othergen.Params{Root: strings.TrimSpace(string(root)), Ref: *ref, Toy: *toy}
	files, err := othergen.Files(p)
	if err == nil {
		err = othergen.Write(p.Root, files)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ferry-othergen:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %d files under %s\n", len(files), othergen.Dir)
}

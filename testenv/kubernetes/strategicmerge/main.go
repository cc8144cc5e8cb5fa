// Command strategic-merge applies strategic merge patches with apimachinery's own
// implementation, for oper8d's differential tests (tests/integration/test_smp_apimachinery.py).
//
// It does what `kubectl patch --local --type strategic` does to an object: the Go type of
// the object's apiVersion/kind comes from client-go's scheme (kubectl's scheme), and
// strategicpatch.StrategicMergePatch merges with that type's struct tags. It reads one case
// per line on stdin, {"original": {...}, "patch": {...}}, and writes one line per case:
//
//	{"result": {...}}            the merged object
//	{"error": "..."}             apimachinery refused the patch
//	{"panic": "..."}             apimachinery panicked (an input it does not handle)
//	{"nondeterministic": true}   runs of the same case disagreed
//
// With arguments APIVERSION KIND it prints instead the lists of that kind that a strategic
// merge patch merges, from the struct tags apimachinery reads: a JSON map from each list's
// path (spec.template.spec.containers[].ports) to its merge key ("" for primitive lists),
// and from each map that a patch replaces whole (patchStrategy "replace") to "$replace".
//
// apimachinery walks the patch's Go maps in random order, so a few patches (a list and a
// $deleteFromPrimitiveList of the same value) have no single answer. Each case therefore
// runs several times; callers skip cases whose runs disagree (errors agree when all runs
// fail, whatever their messages).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"
)

const runs = 10

type input struct {
	Original json.RawMessage `json:"original"`
	Patch    json.RawMessage `json:"patch"`
}

type output struct {
	Result           json.RawMessage `json:"result,omitempty"`
	Error            string          `json:"error,omitempty"`
	Panic            string          `json:"panic,omitempty"`
	Nondeterministic bool            `json:"nondeterministic,omitempty"`
}

func main() {
	if len(os.Args) == 3 {
		printMergeLists(os.Args[1], os.Args[2])
		return
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for in.Scan() {
		if err := enc.Encode(handle(in.Bytes())); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		// one answer per line, right away: callers wait for it before the next case
		if err := out.Flush(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func handle(line []byte) output {
	var c input
	if err := json.Unmarshal(line, &c); err != nil {
		return output{Error: "bad case: " + err.Error()}
	}
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(c.Original, &meta); err != nil {
		return output{Error: "bad original: " + err.Error()}
	}
	gv, err := schema.ParseGroupVersion(meta.APIVersion)
	if err != nil {
		return output{Error: err.Error()}
	}
	first := once(c, gv.WithKind(meta.Kind))
	for i := 1; i < runs; i++ {
		if !first.same(once(c, gv.WithKind(meta.Kind))) {
			return output{Nondeterministic: true}
		}
	}
	return first.output()
}

type outcome struct {
	result, err, panic string
}

// same: the same result, or both refused (an error message prints Go maps, whose order
// varies), or both panicked.
func (o outcome) same(other outcome) bool {
	switch {
	case o.err != "" || other.err != "":
		return o.err != "" && other.err != ""
	case o.panic != "" || other.panic != "":
		return o.panic != "" && other.panic != ""
	}
	return o.result == other.result
}

func (o outcome) output() output {
	switch {
	case o.panic != "":
		return output{Panic: o.panic}
	case o.err != "":
		return output{Error: o.err}
	}
	return output{Result: json.RawMessage(o.result)}
}

func once(c input, gvk schema.GroupVersionKind) (o outcome) {
	defer func() {
		if r := recover(); r != nil {
			o = outcome{panic: fmt.Sprint(r)}
		}
	}()
	typed, err := scheme.Scheme.New(gvk)
	if err != nil {
		return outcome{err: err.Error()}
	}
	// json.Marshal sorts map keys, so equal results are equal strings
	merged, err := strategicpatch.StrategicMergePatch(c.Original, c.Patch, typed)
	if err != nil {
		return outcome{err: err.Error()}
	}
	return outcome{result: string(merged)}
}

func printMergeLists(apiVersion, kind string) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err == nil {
		var typed interface{}
		typed, err = scheme.Scheme.New(gv.WithKind(kind))
		if err == nil {
			lists := map[string]string{}
			walk(reflect.TypeOf(typed).Elem(), "", lists, map[reflect.Type]bool{})
			err = json.NewEncoder(os.Stdout).Encode(lists)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// walk records the merge lists under struct type t, whose fields sit at path.
func walk(t reflect.Type, path string, lists map[string]string, active map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || active[t] {
		return
	}
	active[t] = true
	defer delete(active, t)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			if f.Anonymous {
				walk(f.Type, path, lists, active) // inline
			}
			continue
		}
		at := name
		if path != "" {
			at = path + "." + name
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8 {
			for _, strategy := range strings.Split(f.Tag.Get("patchStrategy"), ",") {
				if strategy == "merge" {
					lists[at] = f.Tag.Get("patchMergeKey")
				}
			}
			walk(ft.Elem(), at+"[]", lists, active)
			continue
		}
		if f.Tag.Get("patchStrategy") == "replace" {
			lists[at] = "$replace"
		}
		walk(ft, at, lists, active)
	}
}

package layers

import (
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestNoTwoFoldersImportEachOther fails when two of the module's
// top-level folders import each other, counting every package in a folder
// as the folder. Longer rings are allowed: internal/harness imports what it
// starts (devtest the whole app), so it closes rings through any folder a
// test harness serves, and the layers already order the packages.
func TestNoTwoFoldersImportEachOther(t *testing.T) {
	graph := folderGraph(listPackages(t))
	for _, pair := range mutual(graph) {
		t.Errorf("top-level folders %s and %s import each other", pair[0], pair[1])
	}
}

// TestMutual pins the pair search.
func TestMutual(t *testing.T) {
	got := mutual(map[string][]string{"a": {"b", "c"}, "b": {"a"}, "c": {"d"}})
	if len(got) != 1 || got[0] != [2]string{"a", "b"} {
		t.Errorf("mutual = %v, want [[a b]]", got)
	}
}

// mutual lists each pair of graph's nodes with edges both ways, once.
func mutual(graph map[string][]string) [][2]string {
	var out [][2]string
	for from, tos := range graph {
		for _, to := range tos {
			if from < to && slices.Contains(graph[to], from) {
				out = append(out, [2]string{from, to})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0]+" "+out[i][1] < out[j][0]+" "+out[j][1] })
	return out
}

// folderGraph maps each top-level folder to the folders it imports.
func folderGraph(pkgs map[string][]string) map[string][]string {
	edges := map[string]map[string]bool{}
	for path, imports := range pkgs {
		from := topFolder(path)
		for _, imp := range imports {
			if to := topFolder(imp); to != from {
				if edges[from] == nil {
					edges[from] = map[string]bool{}
				}
				edges[from][to] = true
			}
		}
	}
	graph := map[string][]string{}
	for from, tos := range edges {
		for to := range tos {
			graph[from] = append(graph[from], to)
		}
		sort.Strings(graph[from])
	}
	return graph
}

func topFolder(path string) string {
	folder, _, _ := strings.Cut(path, "/")
	return folder
}

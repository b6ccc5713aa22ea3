package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Asking any command for help prints it and creates nothing: run in an
// empty directory with no configuration in the environment, the directory
// stays empty (`ontoflow users -h` used to create ./data/ontoflow.db).
func TestHelpCreatesNoState(t *testing.T) {
	cases := [][]string{
		{"-h"}, {"help"},
		{"dev", "-h"}, {"serve", "-h"}, {"worker", "-h"}, {"migrate", "-h"}, {"probe", "-h"},
		{"users", "-h"}, {"users", "--help"}, {"users", "help"},
		{"users", "add", "-h"}, {"users", "list", "-h"}, {"users", "show", "alice", "-h"},
		{"users", "update", "-h"}, {"users", "passwd", "-h"},
		{"secrets", "-h"}, {"secrets", "--help"}, {"secrets", "help"},
		{"secrets", "gen-key", "-h"}, {"secrets", "rotate-key", "-h"},
		{"webdav", "-h"}, {"webdav", "migrate-store", "-h"}, {"webdav", "migrate-store", "--help"},
		// --help as well as -h, for every command.
		{"--help"}, {"dev", "--help"}, {"serve", "--help"}, {"worker", "--help"},
		{"migrate", "--help"}, {"probe", "--help"}, {"users", "add", "--help"},
		{"secrets", "gen-key", "--help"}, {"secrets", "rotate-key", "--help"},
	}
	// No inherited configuration may point the command elsewhere.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ONTOFLOW_") && !strings.HasPrefix(kv, "DATABASE_URL=") && !strings.HasPrefix(kv, "TEMPORAL_") {
			env = append(env, kv)
		}
	}
	for _, args := range cases {
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], args...)
			cmd.Dir = dir
			cmd.Env = append(env, runMainEnv+"=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("ontoflow %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			if !strings.Contains(strings.ToLower(string(out)), "usage") && !strings.Contains(string(out), "-h") {
				t.Fatalf("ontoflow %s printed no help:\n%s", strings.Join(args, " "), out)
			}
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(ents) > 0 {
				t.Fatalf("ontoflow %s created %s in an empty directory", strings.Join(args, " "), ents[0].Name())
			}
		})
	}
	// An unknown subcommand is refused before the database too.
	for _, c := range []string{"users", "secrets", "webdav"} {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], c, "frobnicate")
		cmd.Dir = dir
		cmd.Env = append(env, runMainEnv+"=1")
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "unknown "+c+" subcommand") {
			t.Fatalf("%s frobnicate: %v\n%s", c, err, out)
		}
		if ents, _ := os.ReadDir(dir); len(ents) > 0 {
			t.Fatalf("%s frobnicate created %s", c, ents[0].Name())
		}
	}
}

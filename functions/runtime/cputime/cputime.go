// Package cputime reads how much CPU this process and its children have
// used, for tests that a stopped function stops using it (Linux; Tree
// reports false elsewhere).
package cputime

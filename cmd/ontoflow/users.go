package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/config"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/users"
)

const usersUsage = `Usage: ontoflow users <add|list|show|update|passwd> [flags] [username]

  add NAME     create a user (password from --password, --password-stdin,
               or generated and printed)
  list         list users
  show NAME    show one user as JSON
  update NAME  change roles, permissions, attributes, clearance,
               organization, quota or the disabled flag
  passwd NAME  set a new password (revokes the user's tokens)
`

func usersCmd(args []string, out io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usersUsage)
		return fmt.Errorf("missing users subcommand")
	}
	sub, args := args[0], args[1:]
	// Asking for help, or naming no known subcommand, must not reach the
	// database: opening it would create ./data/ontoflow.db.
	switch sub {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(out, usersUsage)
		return flag.ErrHelp
	case "add", "list", "show", "update", "passwd":
	default:
		fmt.Fprint(os.Stderr, usersUsage)
		return fmt.Errorf("unknown users subcommand %q", sub)
	}
	fs := flag.NewFlagSet("ontoflow users "+sub, flag.ContinueOnError)
	cfg, check := config.Bind(fs, config.ModeAdmin)
	var (
		password, roles, perms, clearance, org, attrs, quota, disabled string
		passwordStdin                                                  bool
	)
	fs.StringVar(&password, "password", "", "password (prefer --password-stdin: flags show in ps)")
	fs.BoolVar(&passwordStdin, "password-stdin", false, "read the password from standard input")
	fs.StringVar(&roles, "roles", "\x00", "comma-separated roles, e.g. admin,analyst")
	fs.StringVar(&perms, "permissions", "\x00", "comma-separated permission keys, e.g. ontology:write,action:*")
	fs.StringVar(&clearance, "clearance", "", "classification clearance (one of --markings)")
	fs.StringVar(&org, "organization", "\x00", "organization")
	fs.StringVar(&attrs, "attributes", "", `attributes as a JSON object, e.g. {"region":"eu"}`)
	fs.StringVar(&quota, "quota", "", "WebDAV quota, e.g. 10GiB (0 = server default)")
	fs.StringVar(&disabled, "disabled", "", "true or false")
	// Flags may come after the positional username.
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if name == "" && fs.NArg() > 0 {
		name = fs.Arg(0)
	}
	if err := check(); err != nil {
		return err
	}
	newLogger(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := models.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	if err := models.Migrate(ctx, db); err != nil {
		return err
	}
	st := &users.Store{DB: db, Levels: cfg.Markings}

	var sp users.Spec
	if roles != "\x00" {
		l := splitList(roles)
		sp.Roles = &l
	}
	if perms != "\x00" {
		l := splitList(perms)
		sp.Permissions = &l
	}
	if clearance != "" {
		sp.Clearance = &clearance
	}
	if org != "\x00" {
		sp.Organization = &org
	}
	if attrs != "" {
		m := map[string]any{}
		if err := json.Unmarshal([]byte(attrs), &m); err != nil {
			return fmt.Errorf("--attributes must be a JSON object: %w", err)
		}
		sp.Attributes = &m
	}
	if quota != "" {
		q, err := config.ParseBytes(quota)
		if err != nil {
			return fmt.Errorf("--quota: %w", err)
		}
		sp.QuotaBytes = &q
	}
	if disabled != "" {
		b := disabled == "true"
		if !b && disabled != "false" {
			return fmt.Errorf("--disabled must be true or false")
		}
		sp.Disabled = &b
	}
	if passwordStdin {
		line, err := bufio.NewReader(os.Stdin).ReadString('\n')
		if err != nil && err != io.EOF {
			return fmt.Errorf("read password: %w", err)
		}
		password = strings.TrimRight(line, "\r\n")
	}
	generated := false
	if password != "" {
		sp.Password = &password
	}

	needName := func() error {
		if name == "" {
			return fmt.Errorf("a username is required")
		}
		return nil
	}
	switch sub {
	case "add":
		if err := needName(); err != nil {
			return err
		}
		if sp.Password == nil {
			password, generated = auth.RandomSecret(18), true
			sp.Password = &password
		}
		sp.Username = &name
		u, err := st.Create(ctx, sp)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "created user %s (id %s)\n", u.Username, u.ID)
		if generated {
			fmt.Fprintf(out, "password: %s\n", password)
		}
	case "list":
		us, err := st.List(ctx, 0, 100000)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "USERNAME\tROLES\tPERMISSIONS\tCLEARANCE\tORGANIZATION\tDISABLED")
		for _, u := range us {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\n", u.Username, strings.Join(u.Roles.V, ","),
				strings.Join(u.Permissions.V, ","), u.Clearance, u.Organization, u.Disabled)
		}
		return tw.Flush()
	case "show":
		if err := needName(); err != nil {
			return err
		}
		u, err := st.Get(ctx, name)
		if err != nil {
			return err
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(u)
	case "update", "passwd":
		if err := needName(); err != nil {
			return err
		}
		if sub == "passwd" {
			if sp.Password == nil {
				password, generated = auth.RandomSecret(18), true
				sp.Password = &password
			}
			sp = users.Spec{Password: sp.Password}
		}
		u, err := st.Update(ctx, name, sp)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "updated user %s\n", u.Username)
		if generated {
			fmt.Fprintf(out, "password: %s\n", password)
		}
	default:
		fmt.Fprint(os.Stderr, usersUsage)
		return fmt.Errorf("unknown users subcommand %q", sub)
	}
	return nil
}

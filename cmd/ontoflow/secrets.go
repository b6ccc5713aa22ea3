package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ontoflow/ontoflow/config"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/secrets"
)

const secretsUsage = `Usage: ontoflow secrets <gen-key|rotate-key> [flags]

  gen-key     print a new random key for ONTOFLOW_SECRET_KEY (base64, 32 bytes)
  rotate-key  re-encrypt every stored secret under the current key:
              with ONTOFLOW_SECRET_KEY (or --secret-key-file) set to the new
              key and the old one in ONTOFLOW_SECRET_KEY_PREVIOUS (or
              --secret-key-previous-file); without a configured key, replace
              the dev key file in --data-dir (stop 'ontoflow dev' first)
`

func secretsCmd(args []string, out io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, secretsUsage)
		return fmt.Errorf("missing secrets subcommand")
	}
	sub, args := args[0], args[1:]
	// Help, and a subcommand that is not one, are answered before flags
	// and configuration are read: asking for help exits 0 and touches
	// nothing (as 'ontoflow users -h').
	switch sub {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(out, secretsUsage)
		return flag.ErrHelp
	case "gen-key", "rotate-key":
	default:
		fmt.Fprint(os.Stderr, secretsUsage)
		return fmt.Errorf("unknown secrets subcommand %q", sub)
	}
	fs := flag.NewFlagSet("ontoflow secrets "+sub, flag.ContinueOnError)
	cfg, check := config.Bind(fs, config.ModeAdmin)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := check(); err != nil {
		return err
	}
	switch sub {
	case "gen-key":
		fmt.Fprintln(out, secrets.GenerateKey())
		return nil
	case "rotate-key":
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		db, err := models.Open(ctx, cfg.DatabaseURL)
		if err != nil {
			return err
		}
		if err := models.Migrate(ctx, db); err != nil {
			return err
		}
		n, err := secrets.Rotate(ctx, db, cfg.Secrets)
		if err != nil {
			return fmt.Errorf("rotate-key (%d re-encrypted before the error): %w", n, err)
		}
		fmt.Fprintf(out, "%d secrets re-encrypted under the current key\n", n)
		return nil
	}
	return fmt.Errorf("unknown secrets subcommand %q", sub) // unreachable: checked above
}

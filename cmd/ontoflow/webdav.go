package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/ontoflow/ontoflow/config"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/webdav"
	"github.com/ontoflow/ontoflow/webdav/contents"
)

const webdavUsage = `Usage: ontoflow webdav migrate-store (--to s3://... | --from s3://... --to posix) [flags]

  migrate-store  copy every user's WebDAV tree between the POSIX layout
                 (--data-dir/files) and S3 mode (the tree in the database,
                 contents in the bucket), either way; resumable (files
                 already copied are skipped), every file verified by its
                 SHA-256, progress on standard output. Stop 'serve' first.
`

func webdavCmd(args []string, out io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, webdavUsage)
		return fmt.Errorf("missing webdav subcommand")
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(out, webdavUsage)
		return flag.ErrHelp
	case "migrate-store":
	default:
		fmt.Fprint(os.Stderr, webdavUsage)
		return fmt.Errorf("unknown webdav subcommand %q", sub)
	}
	fs := flag.NewFlagSet("ontoflow webdav migrate-store", flag.ContinueOnError)
	cfg, check := config.Bind(fs, config.ModeAdmin)
	to := fs.String("to", "", "destination store: s3://bucket/prefix?endpoint=...&region=...&path_style=true, or posix")
	from := fs.String("from", "posix", "source store: posix, or the s3:// URL when --to is posix")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := check(); err != nil {
		return err
	}
	src, err := webdav.ParseStoreURL(*from)
	if err != nil {
		return err
	}
	dst, err := webdav.ParseStoreURL(*to)
	if err != nil {
		return err
	}
	if *to == "" || (src.Kind == "posix") == (dst.Kind == "posix") {
		return fmt.Errorf("one of --from and --to must be posix and the other an s3:// URL")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	db, err := models.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	if err := models.Migrate(ctx, db); err != nil {
		return err
	}
	s3url := dst
	if dst.Kind == "posix" {
		s3url = src
	}
	if s3url.Secret != "" {
		return fmt.Errorf("migrate-store reads S3 credentials from the AWS chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, shared files), not secret=")
	}
	contents, err := contents.OpenS3(ctx, s3url, nil)
	if err != nil {
		return err
	}
	if err := contents.Ping(ctx); err != nil {
		return err
	}
	st, err := webdav.MigrateStore(ctx, db, webdav.MigrateOptions{
		Root: filepath.Join(cfg.DataDir, "files"), Contents: contents, ToContents: dst.Kind == "s3", Progress: out,
	})
	if err != nil {
		return fmt.Errorf("migrate-store (run it again to resume): %w", err)
	}
	fmt.Fprintf(out, "migrate-store: done: %d files copied, %d already there\n", st.Files, st.Skipped)
	return nil
}

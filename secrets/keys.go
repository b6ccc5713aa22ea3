package secrets

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
)

// KeySize is the length of a secret key: AES-256.
const KeySize = 32

// DevKeyFile is the name of the key file `ontoflow dev` generates in its
// data directory, and DevNextKeyFile the one a rotation writes before it
// re-encrypts (read as an extra key while it exists, so a rotation cut
// short loses nothing).
const (
	DevKeyFile     = "secret.key"
	DevNextKeyFile = "secret.key.next"
)

// aadPrefix binds a ciphertext to this use and to the secret's name.
const aadPrefix = "ontoflow/secret/v1\x00"

type key struct {
	id   string
	aead cipher.AEAD
}

// Keyring holds the key new values are sealed with (the primary) and the
// keys older values may still be sealed with (previous keys, read only).
type Keyring struct {
	primary *key
	byID    map[string]*key
}

// NewKeyring builds a keyring from raw 32-byte keys.
func NewKeyring(primary []byte, previous ...[]byte) (*Keyring, error) {
	p, err := newKey(primary)
	if err != nil {
		return nil, fmt.Errorf("primary secret key: %w", err)
	}
	k := &Keyring{primary: p, byID: map[string]*key{p.id: p}}
	for i, raw := range previous {
		pk, err := newKey(raw)
		if err != nil {
			return nil, fmt.Errorf("previous secret key %d: %w", i+1, err)
		}
		if _, dup := k.byID[pk.id]; !dup {
			k.byID[pk.id] = pk
		}
	}
	return k, nil
}

func newKey(raw []byte) (*key, error) {
	if len(raw) != KeySize {
		return nil, fmt.Errorf("a key must be %d bytes, got %d", KeySize, len(raw))
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &key{id: KeyID(raw), aead: aead}, nil
}

// KeyID is the fingerprint stored beside each value: the first 8 bytes of
// a SHA-256 over the key, in hex. It names the key without revealing it.
func KeyID(raw []byte) string {
	sum := sha256.Sum256(append([]byte("ontoflow-secret-key-id\x00"), raw...))
	return hex.EncodeToString(sum[:8])
}

// PrimaryID is the fingerprint of the key new values are sealed with.
func (k *Keyring) PrimaryID() string { return k.primary.id }

// seal encrypts value for the secret name under the primary key: a random
// 12-byte nonce followed by the GCM ciphertext and tag.
func (k *Keyring) seal(name, value string) (ct []byte, keyID string, err error) {
	nonce := make([]byte, k.primary.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, "", fmt.Errorf("read nonce: %w", err)
	}
	return k.primary.aead.Seal(nonce, nonce, []byte(value), []byte(aadPrefix+name)), k.primary.id, nil
}

// open decrypts a value sealed by seal under the key keyID.
func (k *Keyring) open(name, keyID string, ct []byte) (string, error) {
	kk, ok := k.byID[keyID]
	if !ok {
		return "", fmt.Errorf("secret %q is sealed with key %s, which is not configured (see ONTOFLOW_SECRET_KEY_PREVIOUS)", name, keyID)
	}
	n := kk.aead.NonceSize()
	if len(ct) < n {
		return "", fmt.Errorf("secret %q: ciphertext too short", name)
	}
	pt, err := kk.aead.Open(nil, ct[:n], ct[n:], []byte(aadPrefix+name))
	if err != nil {
		return "", fmt.Errorf("secret %q does not decrypt with key %s (tampered or copied from another name)", name, keyID)
	}
	return string(pt), nil
}

// GenerateKey returns a new random key, base64-encoded as ONTOFLOW_SECRET_KEY
// expects it.
func GenerateKey() string {
	raw := make([]byte, KeySize)
	if _, err := rand.Read(raw); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return base64.StdEncoding.EncodeToString(raw)
}

// ParseKey decodes a base64 (standard or URL alphabet, padded or not) key
// of 32 bytes.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if raw, err := enc.DecodeString(s); err == nil {
			if len(raw) != KeySize {
				return nil, fmt.Errorf("the key decodes to %d bytes; it must be %d (generate one with 'ontoflow secrets gen-key')", len(raw), KeySize)
			}
			return raw, nil
		}
	}
	return nil, errors.New("the key is not base64 (generate one with 'ontoflow secrets gen-key')")
}

// KeyConfig says where the keys come from; config.Config fills it.
type KeyConfig struct {
	// Key is a base64 key (ONTOFLOW_SECRET_KEY); KeyFile a file holding
	// one (--secret-key-file). At most one of them.
	Key, KeyFile string
	// Previous are base64 keys older values may still be sealed with
	// (ONTOFLOW_SECRET_KEY_PREVIOUS, comma-separated); PreviousFile a file
	// holding such keys, one a line (--secret-key-previous-file).
	Previous     []string
	PreviousFile string
	// DevDir, when set and no key is configured, is a directory whose
	// DevKeyFile is the key, generated there (mode 0600) on first use
	// when CreateDevKey is set.
	DevDir       string
	CreateDevKey bool
}

// ErrNoKey means no key is configured: secrets cannot be stored or read.
var ErrNoKey = apperr.New(apperr.Unavailable, "secrets are not available: no secret key is configured (set ONTOFLOW_SECRET_KEY or --secret-key-file)")

// LoadKeyring reads the keys cfg names. It returns ErrNoKey when none is
// configured and there is no development key file.
func LoadKeyring(cfg KeyConfig) (*Keyring, error) {
	if cfg.Key != "" && cfg.KeyFile != "" {
		return nil, errors.New("ONTOFLOW_SECRET_KEY and --secret-key-file are both set; choose one")
	}
	prev, err := previousKeys(cfg)
	if err != nil {
		return nil, err
	}
	var primary []byte
	switch {
	case cfg.Key != "":
		if primary, err = ParseKey(cfg.Key); err != nil {
			return nil, fmt.Errorf("ONTOFLOW_SECRET_KEY: %w", err)
		}
	case cfg.KeyFile != "":
		if primary, err = readKeyFile(cfg.KeyFile); err != nil {
			return nil, err
		}
	case cfg.DevDir != "":
		if primary, err = devKey(cfg.DevDir, cfg.CreateDevKey); err != nil {
			return nil, err
		}
		if primary == nil {
			return nil, ErrNoKey
		}
		// A rotation cut short may have sealed values under the next key.
		if next, err := readKeyFile(filepath.Join(cfg.DevDir, DevNextKeyFile)); err == nil {
			prev = append(prev, next)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	default:
		return nil, ErrNoKey
	}
	return NewKeyring(primary, prev...)
}

func previousKeys(cfg KeyConfig) ([][]byte, error) {
	var out [][]byte
	texts := cfg.Previous
	if cfg.PreviousFile != "" {
		b, err := os.ReadFile(cfg.PreviousFile)
		if err != nil {
			return nil, fmt.Errorf("read --secret-key-previous-file: %w", err)
		}
		texts = append(texts, strings.Split(string(b), "\n")...)
	}
	for _, t := range texts {
		if strings.TrimSpace(t) == "" {
			continue
		}
		raw, err := ParseKey(t)
		if err != nil {
			return nil, fmt.Errorf("previous secret key: %w", err)
		}
		out = append(out, raw)
	}
	return out, nil
}

func readKeyFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read secret key file: %w", err)
	}
	raw, err := ParseKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("secret key file %s: %w", path, err)
	}
	return raw, nil
}

// devKey reads dir/DevKeyFile, creating it when create is set and it does
// not exist; nil without error when it does not exist and create is off.
func devKey(dir string, create bool) ([]byte, error) {
	path := filepath.Join(dir, DevKeyFile)
	raw, err := readKeyFile(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !create {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return raw, err
	}
	if err := writeKeyFile(path, GenerateKey()); err != nil {
		if errors.Is(err, fs.ErrExist) { // another process made it first
			return readKeyFile(path)
		}
		return nil, err
	}
	return readKeyFile(path)
}

// writeKeyFile creates path (never overwriting) with the key, mode 0600,
// flushed to disk: losing it loses every secret.
func writeKeyFile(path, b64 string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("create key directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create secret key file: %w", err)
	}
	if _, err := f.WriteString(b64 + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("write secret key file: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("flush secret key file: %w", err)
	}
	return f.Close()
}

// Rotate re-encrypts every secret under a new key and returns how many it
// re-encrypted.
//
// With a configured key (cfg.Key or cfg.KeyFile: the new key, the old
// one among cfg.Previous or cfg.PreviousFile) it re-encrypts under the
// configured key. Without one it rotates the development key file of
// cfg.DevDir: a new key is written to DevNextKeyFile first (so an
// interruption loses nothing: the next start reads both), the values are
// re-encrypted under it, and then it replaces DevKeyFile. Stop the
// processes that use the key file first; they keep the old key in memory.
func Rotate(ctx context.Context, db *gorm.DB, cfg KeyConfig) (int, error) {
	if cfg.Key != "" || cfg.KeyFile != "" || cfg.DevDir == "" {
		keys, err := LoadKeyring(cfg)
		if err != nil {
			return 0, err
		}
		return NewStore(db, keys).RotateKey(ctx)
	}
	old, err := devKey(cfg.DevDir, false)
	if err != nil {
		return 0, err
	}
	if old == nil {
		return 0, fmt.Errorf("no secret key configured and no %s in %s: nothing to rotate", DevKeyFile, cfg.DevDir)
	}
	nextPath := filepath.Join(cfg.DevDir, DevNextKeyFile)
	next, err := readKeyFile(nextPath)
	if errors.Is(err, fs.ErrNotExist) { // else a rotation cut short: finish it with its key
		if err = writeKeyFile(nextPath, GenerateKey()); err == nil {
			next, err = readKeyFile(nextPath)
		}
	}
	if err != nil {
		return 0, err
	}
	prev, err := previousKeys(cfg)
	if err != nil {
		return 0, err
	}
	keys, err := NewKeyring(next, append(prev, old)...)
	if err != nil {
		return 0, err
	}
	n, err := NewStore(db, keys).RotateKey(ctx)
	if err != nil {
		return n, err
	}
	if err := os.Rename(nextPath, filepath.Join(cfg.DevDir, DevKeyFile)); err != nil {
		return n, fmt.Errorf("install the new key file: %w", err)
	}
	return n, nil
}

// Seal encrypts value for purpose (which binds it: a sealed value copied
// to another purpose does not open) under the primary key, for values
// other packages keep at rest, such as an identity provider's refresh
// tokens. The result names its key, so rotation reads it on.
func (s *Store) Seal(purpose, value string) (string, error) {
	if s.keys == nil {
		return "", ErrNoKey
	}
	ct, keyID, err := s.keys.seal("sealed/"+purpose, value)
	if err != nil {
		return "", fmt.Errorf("seal %s: %w", purpose, err)
	}
	return keyID + ":" + base64.RawURLEncoding.EncodeToString(ct), nil
}

// Unseal decrypts what Seal returned for the same purpose.
func (s *Store) Unseal(purpose, sealed string) (string, error) {
	if s.keys == nil {
		return "", ErrNoKey
	}
	keyID, b64, ok := strings.Cut(sealed, ":")
	ct, err := base64.RawURLEncoding.DecodeString(b64)
	if !ok || err != nil {
		return "", fmt.Errorf("unseal %s: not a sealed value", purpose)
	}
	return s.keys.open("sealed/"+purpose, keyID, ct)
}

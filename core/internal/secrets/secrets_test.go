package secrets_test

import (
	"bytes"
	"encoding/base64"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/govgate/govgate/core/internal/secrets"
)

func TestSealOpen(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	box, err := secrets.New(key)
	if err != nil {
		t.Fatal(err)
	}
	ct, err := box.Seal([]byte("whsec_secret"), []byte("row-1"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(ct, []byte("whsec_secret")) {
		t.Fatal("plaintext in the ciphertext")
	}
	if pt, err := box.Open(ct, []byte("row-1")); err != nil || string(pt) != "whsec_secret" {
		t.Fatalf("open: %q %v", pt, err)
	}
	if _, err := box.Open(ct, []byte("row-2")); err == nil {
		t.Fatal("a ciphertext opened under another row's binding")
	}
	ct[len(ct)-1] ^= 1
	if _, err := box.Open(ct, []byte("row-1")); err == nil {
		t.Fatal("a tampered ciphertext opened")
	}
	other, _ := secrets.New(bytes.Repeat([]byte{8}, 32))
	ct2, _ := box.Seal([]byte("x"), nil)
	if _, err := other.Open(ct2, nil); err == nil {
		t.Fatal("opened with the wrong key")
	}
	if a, _ := box.Seal([]byte("x"), nil); bytes.Equal(a, ct2) {
		t.Fatal("two seals of the same plaintext are identical (nonce reuse)")
	}
}

func TestParseKey(t *testing.T) {
	key := bytes.Repeat([]byte{1}, 32)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if got, err := secrets.ParseKey(enc.EncodeToString(key)); err != nil || !bytes.Equal(got, key) {
			t.Fatalf("ParseKey: %v", err)
		}
	}
	for _, bad := range []string{"", "not base64!", base64.StdEncoding.EncodeToString(make([]byte, 16))} {
		if _, err := secrets.ParseKey(bad); err == nil {
			t.Fatalf("ParseKey(%q) accepted", bad)
		}
	}
}

func TestKeyFileIsCreatedPrivateAndReused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "govgate.key")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	k1, err := secrets.LoadOrCreateKeyFile(path, log)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v", fi.Mode().Perm(), err)
	}
	k2, err := secrets.LoadOrCreateKeyFile(path, log)
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatal("the key changed between starts")
	}
}

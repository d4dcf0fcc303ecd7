// Package secrets encrypts webhook secrets at rest with AES-256-GCM under a
// 32-byte key that never enters the database. Each ciphertext is bound to its
// row through additional authenticated data, so a ciphertext copied to
// another row does not decrypt.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the size of the key in bytes.
const KeySize = 32

// version prefixes every ciphertext so the scheme can change later.
const version byte = 1

// Box seals and opens secrets.
type Box struct {
	aead cipher.AEAD
}

// New returns a Box for a 32-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secret key: want %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	return &Box{aead: aead}, nil
}

// ParseKey decodes a base64 key (standard or URL alphabet, padded or not).
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err := enc.DecodeString(s); err == nil {
			if len(key) != KeySize {
				return nil, fmt.Errorf("secret key: want base64 of %d bytes, got %d bytes", KeySize, len(key))
			}
			return key, nil
		}
	}
	return nil, errors.New("secret key: not valid base64")
}

// Seal encrypts plaintext bound to aad.
func (b *Box) Seal(plaintext, aad []byte) ([]byte, error) {
	nonce := make([]byte, b.aead.NonceSize(), 1+b.aead.NonceSize()+len(plaintext)+b.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal secret: %w", err)
	}
	out := append([]byte{version}, nonce...)
	return b.aead.Seal(out, nonce, plaintext, aad), nil
}

// Open decrypts a ciphertext made by Seal with the same aad.
func (b *Box) Open(ciphertext, aad []byte) ([]byte, error) {
	ns := b.aead.NonceSize()
	if len(ciphertext) < 1+ns+b.aead.Overhead() || ciphertext[0] != version {
		return nil, errors.New("open secret: malformed ciphertext")
	}
	pt, err := b.aead.Open(nil, ciphertext[1:1+ns], ciphertext[1+ns:], aad)
	if err != nil {
		return nil, errors.New("open secret: authentication failed (wrong GOVGATE_SECRET_KEY?)")
	}
	return pt, nil
}

// LoadOrCreateKeyFile reads a base64 key from path, or, when the file does
// not exist, generates one and writes it with mode 0600. It reports whether
// it created the key.
func LoadOrCreateKeyFile(path string, log *slog.Logger) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err == nil {
		if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
			log.Warn("secret key file is readable by others; chmod 600 it", "path", path, "mode", fi.Mode().Perm().String())
		}
		return ParseKey(string(raw))
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read secret key file: %w", err)
	}
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate secret key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create secret key dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) { // another process won the race
			return LoadOrCreateKeyFile(path, log)
		}
		return nil, fmt.Errorf("create secret key file: %w", err)
	}
	_, err = f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return nil, fmt.Errorf("write secret key file: %w", err)
	}
	log.Warn("GOVGATE_SECRET_KEY is not set: generated a new key to encrypt webhook secrets; back it up, without it stored secrets cannot be read", "path", path)
	return key, nil
}

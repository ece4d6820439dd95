package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/krm-catalog/krm-catalog/oci/sign"
)

func newKeyCmd(streams IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "key",
		Short: "Make the cosign key pair that sign, publisher add-key and verify use",
	}
	cmd.AddCommand(newKeyGenerateCmd(streams))
	return cmd
}

func newKeyGenerateCmd(streams IO) *cobra.Command {
	var (
		prefix string
		force  bool
		format *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "generate [--output-key-prefix PREFIX]",
		Short: "Write a cosign key pair: PREFIX.key (encrypted) and PREFIX.pub",
		Long: `Generate writes a new ECDSA P-256 key pair in the files cosign generate-key-pair writes: the
private key encrypted with a password as cosign encrypts it (scrypt and secretbox, PEM type
ENCRYPTED SIGSTORE PRIVATE KEY), mode 0600, and the public key as PEM. cosign sign-blob and
verify-blob (v2 and v3) accept them, as do sign, verify and publisher add-key. The password comes
from COSIGN_PASSWORD (set and empty: no password), else it is asked twice on the terminal.
Existing files are kept unless --force.`,
		Example: `  COSIGN_PASSWORD=... krm-catalog key generate                 # cosign.key, cosign.pub
  krm-catalog key generate --output-key-prefix ci               # ci.key, ci.pub; asks the password`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := format.check(); err != nil {
				return err
			}
			privPath, pubPath := prefix+".key", prefix+".pub"
			if !force {
				for _, p := range []string{privPath, pubPath} {
					if _, err := os.Stat(p); err == nil {
						return usageErr(fmt.Errorf("%s exists: keep it, or replace it with --force", p))
					}
				}
			}
			password, err := keyPassword(streams)
			if err != nil {
				return usageErr(err)
			}
			priv, pub, err := sign.GenerateKeyPair(password)
			if err != nil {
				return failure(err)
			}
			if err := writeKeyFile(privPath, priv, 0o600); err != nil {
				return failure(err)
			}
			if err := writeKeyFile(pubPath, pub, 0o644); err != nil {
				return failure(err)
			}
			pk, err := sign.ParseOnePublicKey(pubPath, pub)
			if err != nil {
				return failure(err)
			}
			if format.is("json") {
				return writeJSON(cmd.OutOrStdout(), map[string]string{"privateKey": privPath, "publicKey": pubPath, "id": pk.ID()})
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (private, encrypted) and %s (public, key %s)\n", privPath, pubPath, pk.ID())
			return err
		},
	}
	cmd.Flags().StringVar(&prefix, "output-key-prefix", "cosign", "the files' name without .key and .pub, as cosign's flag")
	cmd.Flags().BoolVarP(&force, "force", "f", false, "replace existing files")
	format = addFormatFlag(cmd, "text", "json")
	return cmd
}

// keyPassword is COSIGN_PASSWORD when set, else a password typed twice on the terminal.
func keyPassword(streams IO) ([]byte, error) {
	if p, ok := os.LookupEnv(sign.PasswordEnv); ok {
		return []byte(p), nil
	}
	in, ok := streams.In.(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) {
		return nil, fmt.Errorf("set %s to the password for the private key (empty for none): there is no terminal to ask on", sign.PasswordEnv)
	}
	ask := func(prompt string) ([]byte, error) {
		fmt.Fprint(streams.Err, prompt)
		defer fmt.Fprintln(streams.Err)
		return term.ReadPassword(int(in.Fd()))
	}
	first, err := ask("Enter password for private key: ")
	if err != nil {
		return nil, fmt.Errorf("read password: %w", err)
	}
	again, err := ask("Enter password for private key again: ")
	if err != nil {
		return nil, fmt.Errorf("read password: %w", err)
	}
	if !bytes.Equal(first, again) {
		return nil, errors.New("the passwords differ")
	}
	return first, nil
}

// writeKeyFile writes a key file whole or not at all (a temporary file renamed into place).
func writeKeyFile(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".key-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := io.Copy(tmp, bytes.NewReader(data)); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

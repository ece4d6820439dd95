package cmd

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"oras.land/oras-go/v2/registry/remote/auth"
)

func newLoginCmd() *cobra.Command {
	var (
		rf            registryFlags
		username      string
		passwordStdin bool
	)
	cmd := &cobra.Command{
		Use:   "login [-u USER] --password-stdin REGISTRY",
		Short: "Log in to a registry; the credentials go into the docker config",
		Long: `Login checks the credentials against REGISTRY and stores them where docker keeps them
(the credential helper the docker config names, or the config file itself). The password is read
from standard input, never from the command line, where other users could see it.`,
		Example: `  echo "$REGISTRY_TOKEN" | krm-catalog login -u ci --password-stdin registry.example.com`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := rf.format.check(); err != nil {
				return err
			}
			if !passwordStdin {
				return usageErr(fmt.Errorf("give the password on standard input with --password-stdin"))
			}
			line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
			if err != nil && line == "" {
				return usageErr(fmt.Errorf("read password from standard input: %w", err))
			}
			password := strings.TrimRight(line, "\r\n")
			if password == "" {
				return usageErr(fmt.Errorf("the password on standard input is empty"))
			}
			cred := auth.Credential{Username: username, Password: password}
			if username == "" {
				// A token without a user name is an identity token (oras and docker treat it so).
				cred = auth.Credential{RefreshToken: password}
			}
			client, err := rf.client(cmd, withoutCache)
			if err != nil {
				return err
			}
			if err := client.Login(cmd.Context(), args[0], cred); err != nil {
				return opErr(err)
			}
			return printDone(cmd, rf, "login", args[0])
		},
	}
	rf.register(cmd)
	cmd.Flags().StringVarP(&username, "username", "u", "", "user name")
	cmd.Flags().BoolVar(&passwordStdin, "password-stdin", false, "read the password (or token) from standard input")
	return cmd
}

func newLogoutCmd() *cobra.Command {
	var rf registryFlags
	cmd := &cobra.Command{
		Use:   "logout REGISTRY",
		Short: "Forget the stored credentials of a registry",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := rf.format.check(); err != nil {
				return err
			}
			client, err := rf.client(cmd, withoutCache)
			if err != nil {
				return err
			}
			if err := client.Logout(cmd.Context(), args[0]); err != nil {
				return opErr(err)
			}
			return printDone(cmd, rf, "logout", args[0])
		},
	}
	rf.register(cmd)
	return cmd
}

func printDone(cmd *cobra.Command, rf registryFlags, what, registry string) error {
	if rf.format.is("json") {
		return writeJSON(cmd.OutOrStdout(), map[string]string{"registry": registry, "result": what + " succeeded"})
	}
	_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s %s succeeded\n", what, registry)
	return err
}

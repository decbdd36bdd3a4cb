package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// guardSubcommands makes every command below the root that has subcommands
// refuse an unknown one as the root does (cobra checks only the root's): a
// usage error (exit 2) naming it, with the closest subcommand names
// ("Did you mean this?") or, when none is close, the list of them. Without
// it, "deltactl alter set-propertys ..." printed alter's help and exited 0
// with nothing committed.
//
// A parent that is a command itself (ingest <file> <table>, with its kafka
// subcommand) takes its first argument as a subcommand name only when no
// file of that name exists and a subcommand name is close to it (cobra's
// suggestions: an edit distance of at most 2, or a prefix); any other
// argument stays its own.
func guardSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		guardSubcommands(sub)
	}
	if !c.HasParent() || !c.HasSubCommands() {
		return
	}
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2 // cobra's default, which it sets on the root only
	}
	if c.Runnable() {
		own := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && args[0] != "-" && len(cmd.SuggestionsFor(args[0])) > 0 {
				if _, err := os.Stat(args[0]); err != nil {
					return unknownSubcommand(cmd, args[0])
				}
			}
			if own != nil {
				return own(cmd, args)
			}
			return nil
		}
		return
	}
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return unknownSubcommand(cmd, args[0])
		}
		return nil
	}
	// Without arguments the command shows its help, as before.
	c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
}

// unknownSubcommand is the usage error for name, which is no subcommand of
// cmd, in the words cobra uses for an unknown command of the root.
func unknownSubcommand(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, cmd.CommandPath())
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t") + "\n"
	} else {
		var names []string
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				names = append(names, sub.Name())
			}
		}
		msg += " (its subcommands: " + strings.Join(names, ", ") + ")"
	}
	return usagef("%s", msg)
}

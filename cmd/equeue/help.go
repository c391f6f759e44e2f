package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// tidyHelp makes every command's --help short and plain: a subcommand
// names the global flags in one line instead of repeating their help (the
// root command's --help explains them), and no flag shows a Go type name
// or an empty list as its default.
func tidyHelp(root *cobra.Command) {
	root.SetUsageFunc(usage)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.LocalNonPersistentFlags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				// pflag hides an empty list's default for its own slice
				// types but prints "(default [])" for the others.
				switch f.Value.Type() {
				case "stringSlice", "stringArray", "intSlice":
				default:
					if f.DefValue == "[]" {
						f.DefValue = ""
					}
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// usage prints a command's usage: cobra's layout, with the global flags
// listed by name only below a subcommand's own flags.
func usage(c *cobra.Command) error {
	var b strings.Builder
	b.WriteString("Usage:")
	if c.Runnable() {
		fmt.Fprintf(&b, "\n  %s", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n  %s [command]", c.CommandPath())
	}
	if c.HasExample() {
		fmt.Fprintf(&b, "\n\nExamples:\n%s", c.Example)
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n\nAvailable Commands:")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(&b, "\n  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	if c.HasAvailableLocalFlags() {
		fmt.Fprintf(&b, "\n\nFlags:\n%s", strings.TrimRight(c.LocalFlags().FlagUsages(), " \n"))
	}
	if c.HasAvailableInheritedFlags() {
		var names []string
		c.InheritedFlags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				names = append(names, "--"+f.Name)
			}
		})
		fmt.Fprintf(&b, "\n\nGlobal flags (see \"%s --help\"):\n  %s", c.Root().Name(), strings.Join(names, ", "))
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n\nUse \"%s [command] --help\" for more information about a command.", c.CommandPath())
	}
	b.WriteString("\n")
	_, err := fmt.Fprint(c.OutOrStderr(), b.String())
	return err
}

package cmdutil

import (
	"strings"

	"github.com/spf13/cobra"
)

// CityFlag is --city of a command that acts in, or shows, one city only.
// Embed it in a command's options: Complete calls CompleteCity, Validate
// ValidateCity.
type CityFlag struct {
	// City is --city, a city code such as DFW once completed; empty means
	// every city.
	City string
}

// AddCityFlag binds --city, described by usage, and completes it with the
// cities of the project.
func (c *CityFlag) AddCityFlag(cmd *cobra.Command, f *Factory, usage string) {
	cmd.Flags().StringVar(&c.City, "city", "", usage)
	_ = cmd.RegisterFlagCompletionFunc("city", CompleteCities(f))
}

// CompleteCity writes the city as city codes are written: trimmed, upper
// case (dfw is DFW).
func (c *CityFlag) CompleteCity() {
	c.City = strings.ToUpper(strings.TrimSpace(c.City))
}

// ValidateCity rejects a city that is not a city code; no city passes.
func (c *CityFlag) ValidateCity() error {
	if c.City != "" && !IsCityCode(c.City) {
		return UsageErrorf("--city %q is not a city code: use three letters such as DFW", c.City)
	}
	return nil
}

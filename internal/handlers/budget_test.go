package handlers

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
)

func TestBudget(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	now := clk.Now()
	for name, tc := range map[string]struct {
		left, want time.Duration
	}{
		"LongInvocationKeepsTheReserve": {left: 15 * time.Minute, want: 15*time.Minute - 5*time.Second},
		"ShortInvocationKeepsAQuarter":  {left: 8 * time.Second, want: 6 * time.Second},
		"PastDeadlineClaimsNothing":     {left: -time.Second, want: 0},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := deadlineCtx{context.Background(), now.Add(tc.left)}
			require.Equal(t, now.Add(tc.want), Budget{}.ClaimUntil(ctx, clk))
		})
	}
	require.Equal(t, now.Add(30*time.Second-5*time.Second), Budget{}.ClaimUntil(context.Background(), clk))
}

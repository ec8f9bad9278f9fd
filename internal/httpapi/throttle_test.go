package httpapi

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

func cancelled(codes ...string) error {
	tc := &types.TransactionCanceledException{}
	for _, c := range codes {
		tc.CancellationReasons = append(tc.CancellationReasons, types.CancellationReason{Code: aws.String(c)})
	}
	return fmt.Errorf("enqueue: %w", tc)
}

func TestIsThrottle(t *testing.T) {
	t.Parallel()
	require.True(t, isThrottle(fmt.Errorf("x: %w", &types.ProvisionedThroughputExceededException{})))
	require.True(t, isThrottle(&types.RequestLimitExceeded{}))
	require.True(t, isThrottle(cancelled("None", "ThrottlingError")))
	require.True(t, isThrottle(cancelled("TransactionConflict", "None")))
	require.False(t, isThrottle(cancelled("ConditionalCheckFailed", "ThrottlingError")))
	require.False(t, isThrottle(cancelled("None", "None")))
	require.False(t, isThrottle(&types.ResourceNotFoundException{}))
	require.False(t, isThrottle(errors.New("plain")))
}

package coldstart

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/clock"
	"github.com/ferryhq/ferry/internal/ddblocal"
	"github.com/ferryhq/ferry/internal/outbox"
)

func TestNew(t *testing.T) {
	t.Parallel()

	t.Run("RefusesNamingTheVariable", func(t *testing.T) {
		t.Parallel()
		for _, c := range []struct {
			env  map[string]string
			name string
		}{
			{map[string]string{}, "FERRY_TABLE"},
			{map[string]string{"FERRY_TABLE": "t", "FERRY_RETENTION": "soon"}, "FERRY_RETENTION"},
			{map[string]string{"FERRY_TABLE": "t", "FERRY_ROW_CAP": "-1"}, "FERRY_ROW_CAP"},
			{map[string]string{"FERRY_TABLE": "t", "FERRY_LEASE": "1s"}, "FERRY_WRITE_MARGIN"},
			{map[string]string{"FERRY_TABLE": "t", "FERRY_ALLOW_PRIVATE_WEBHOOKS": "yes"}, "FERRY_ALLOW_PRIVATE_WEBHOOKS"},
		} {
			_, err := New(context.Background(), "drainer", env(c.env))
			require.ErrorContains(t, err, c.name)
		}
	})

	t.Run("ReadsTheEngineConfig", func(t *testing.T) {
		t.Parallel()
		rt, err := New(context.Background(), "retention", env(map[string]string{
			"FERRY_TABLE": "ferry", "FERRY_PARTITIONS": "8", "FERRY_RETENTION": "720h", "FERRY_ROW_CAP": "1000",
			"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y",
		}))
		require.NoError(t, err)
		c := rt.Engine.Config()
		require.Equal(t, "ferry", c.Table)
		require.Equal(t, 8, c.Partitions)
		require.Equal(t, 1000, c.RowCap)
		require.Equal(t, "720h0m0s", c.Retention.String())
		for _, kind := range []string{"webhook", "email", "eventbridge"} {
			_, ok := rt.Engine.Registry().Lookup(kind)
			require.True(t, ok, kind)
		}
		var _ outbox.Observer = rt.Obs
		require.Equal(t, SweepPartitions, rt.Ports.Partitions, "a sweep drains partitions concurrently")
	})
}

func TestSecretNameFormat(t *testing.T) {
	t.Parallel()
	arn := "arn:aws:secretsmanager:eu-west-1:111122223333:secret:ferry/webhooks-AbCdEf"
	require.Equal(t, arn, fmt.Sprintf(secretNameFormat(arn), "default"))
	require.Equal(t, "ferry/webhook/default", fmt.Sprintf(secretNameFormat("ferry/webhook/%s"), "default"))
	require.Equal(t, "100%x", fmt.Sprintf(secretNameFormat("100%x"), "ws"))
	require.Equal(t, "", secretNameFormat(""))
}

type recordingSender struct{ got *sesv2.SendEmailInput }

func (r *recordingSender) SendEmail(_ context.Context, in *sesv2.SendEmailInput, _ ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error) {
	r.got = in
	return &sesv2.SendEmailOutput{}, nil
}

func TestDefaultConfigurationSet(t *testing.T) {
	t.Parallel()
	rec := &recordingSender{}
	d := defaultConfigurationSet{next: rec, name: "ferry"}

	in := &sesv2.SendEmailInput{}
	_, err := d.SendEmail(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, "ferry", *rec.got.ConfigurationSetName)
	require.Nil(t, in.ConfigurationSetName, "the caller's input is not changed")

	_, err = d.SendEmail(context.Background(), &sesv2.SendEmailInput{ConfigurationSetName: aws.String("own")})
	require.NoError(t, err)
	require.Equal(t, "own", *rec.got.ConfigurationSetName)
}

// unreachable fails every GetItem: DynamoDB cannot be reached.
type unreachable struct{ outbox.DynamoDB }

func (unreachable) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return nil, errors.New("dial tcp: connection refused")
}

// TestTableCheck: a cold start refuses a table that is not a Ferry table
// of this build's layout, and starts when the table cannot be read now
// (the engine checks it before its first call), saying so in the log.
func TestTableCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := ddblocal.New()
	_, err := db.CreateTable(ctx, outbox.TableInput("users"))
	require.NoError(t, err)
	e, err := outbox.New(db, clock.System{}, outbox.NewRegistry(), outbox.Config{Table: "users"})
	require.NoError(t, err)
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	err = TableCheck(ctx, e, log)
	require.ErrorIs(t, err, outbox.ErrLayout)
	require.ErrorContains(t, err, "table users is not a Ferry table")

	e, err = outbox.New(unreachable{db}, clock.System{}, outbox.NewRegistry(), outbox.Config{Table: "users"})
	require.NoError(t, err)
	require.NoError(t, TableCheck(ctx, e, log))
	require.Contains(t, logs.String(), "could not be read at cold start")
	_, err = e.PartitionLayout(ctx)
	require.ErrorContains(t, err, "connection refused", "the first call checks it again")
}

package ddblocal_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/ddblocal"
)

// Issue 28 item 3: a full disk under a persistent engine. Writes are
// refused with a retryable error while the log cannot take them, reads keep
// being served, writes come back by themselves once the disk has room, and
// nothing acknowledged is lost.

func requireUnavailable(t *testing.T, err error) {
	t.Helper()
	var api smithy.APIError
	require.ErrorAs(t, err, &api)
	require.Equal(t, "ServiceUnavailable", api.ErrorCode(), "%v", err)
	require.Equal(t, smithy.FaultServer, api.ErrorFault(), "a server fault: the SDKs retry it")
}

func putPadded(db *ddblocal.DB, id, pad int) error {
	_, err := db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("plain"),
		Item: map[string]types.AttributeValue{"id": n(fmt.Sprint(id)), "v": n(fmt.Sprint(id)), "pad": s(strings.Repeat("p", pad))}})
	return err
}

func getItem(t *testing.T, db *ddblocal.DB, id int) (map[string]types.AttributeValue, error) {
	t.Helper()
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("plain"),
		Key: map[string]types.AttributeValue{"id": n(fmt.Sprint(id))}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

// openOnDisk opens a persistent engine, with the test tables, whose log is
// on a disk with 1 MiB free and a reserve of 64 KiB.
func openOnDisk(t *testing.T) (string, *ddblocal.DiskForTest, *ddblocal.DB) {
	t.Helper()
	dir := t.TempDir()
	disk := &ddblocal.DiskForTest{}
	disk.SetFree(1 << 20)
	db, err := ddblocal.Open(dir, ddblocal.WithDiskForTest(disk, 64<<10), ddblocal.WithSnapshotEvery(0))
	require.NoError(t, err)
	persistTables(t, db)
	return dir, disk, db
}

func TestDiskFullRefusesWritesServesReadsAndRecovers(t *testing.T) {
	t.Parallel()
	dir, disk, db := openOnDisk(t)
	acked := []int{}
	for i := range 5 {
		require.NoError(t, putPadded(db, i, 1000))
		acked = append(acked, i)
	}
	require.NoError(t, db.Health())

	// The disk fills up: the write that finds it full is written into the
	// reserve and acknowledged; from then on writes are refused before they
	// change anything, and reads are served.
	disk.SetFree(500)
	require.NoError(t, putPadded(db, 5, 1000), "the reserve takes the write in flight")
	acked = append(acked, 5)
	require.Equal(t, 1, disk.Refused)
	err := putPadded(db, 6, 1000)
	requireUnavailable(t, err)
	require.Contains(t, err.Error(), "disk is full")
	_, err = db.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String("plain"), Key: map[string]types.AttributeValue{"id": n("0")}})
	requireUnavailable(t, err)
	for _, id := range acked {
		it, err := getItem(t, db, id)
		require.NoError(t, err, "reads are served while the disk is full")
		require.NotNil(t, it)
	}
	it, err := getItem(t, db, 6)
	require.NoError(t, err)
	require.Nil(t, it, "a refused write changed nothing")
	sc, err := db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("plain")})
	require.NoError(t, err)
	require.Len(t, sc.Items, len(acked))
	var he *ddblocal.HealthError
	require.ErrorAs(t, db.Health(), &he)
	require.True(t, he.Degraded)
	require.Contains(t, he.Error(), "degraded: ")

	// Room again: writes come back without a restart.
	disk.SetFree(1 << 20)
	require.NoError(t, db.Health())
	require.NoError(t, putPadded(db, 7, 1000))
	acked = append(acked, 7)

	ddblocal.CrashForTest(db)
	db, err = ddblocal.Open(dir)
	require.NoError(t, err)
	for _, id := range acked {
		it, err := getItem(t, db, id)
		require.NoError(t, err)
		require.NotNil(t, it, "acknowledged item %d", id)
	}
	it, err = getItem(t, db, 6)
	require.NoError(t, err)
	require.Nil(t, it)
	require.NoError(t, db.Close())
}

// A record bigger than the released reserve cannot be written at all: its
// change is in memory but not in the log, so reads are refused too until
// the disk has room; then the record is written and everything is served.
func TestDiskFullWithAWriteTheReserveCannotHold(t *testing.T) {
	t.Parallel()
	dir, disk, db := openOnDisk(t)
	require.NoError(t, putPadded(db, 1, 100))
	disk.SetFree(0)
	err := putPadded(db, 2, 100<<10) // 100 KB: more than the 64 KB reserve
	requireUnavailable(t, err)
	_, err = getItem(t, db, 1)
	requireUnavailable(t, err)
	var he *ddblocal.HealthError
	require.ErrorAs(t, db.Health(), &he)
	require.True(t, he.Degraded)

	disk.SetFree(1 << 20)
	it, err := getItem(t, db, 2)
	require.NoError(t, err, "the pending record is written once there is room")
	require.NotNil(t, it, "and the write it holds took effect (its call was answered ServiceUnavailable: outcome not promised)")
	require.NoError(t, db.Health())
	require.NoError(t, putPadded(db, 3, 100))

	ddblocal.CrashForTest(db)
	db, err = ddblocal.Open(dir)
	require.NoError(t, err)
	for _, id := range []int{1, 2, 3} {
		it, err := getItem(t, db, id)
		require.NoError(t, err)
		require.NotNil(t, it, "item %d", id)
	}
	require.NoError(t, db.Close())
}

// An engine opened on a disk with no room for its reserve starts degraded:
// it serves reads and refuses writes until the disk has room.
func TestDiskFullAtStartUp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := ddblocal.Open(dir)
	require.NoError(t, err)
	persistTables(t, db)
	require.NoError(t, putPadded(db, 1, 10))
	require.NoError(t, db.Close())

	disk := &ddblocal.DiskForTest{}
	disk.SetFree(1000)
	db, err = ddblocal.Open(dir, ddblocal.WithDiskForTest(disk, 64<<10))
	require.NoError(t, err)
	var he *ddblocal.HealthError
	require.ErrorAs(t, db.Health(), &he)
	it, err := getItem(t, db, 1)
	require.NoError(t, err)
	require.NotNil(t, it)
	requireUnavailable(t, putPadded(db, 2, 10))
	disk.SetFree(1 << 20)
	require.NoError(t, putPadded(db, 2, 10))
	require.NoError(t, db.Close())
}

// The in-memory engine is always healthy.
func TestHealthOfAnInMemoryEngine(t *testing.T) {
	t.Parallel()
	require.NoError(t, ddblocal.New().Health())
}

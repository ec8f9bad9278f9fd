import sys
import boto3
kw = dict(endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
ddb = boto3.client("dynamodb", **kw)
ddb.create_table(TableName="legacy", AttributeDefinitions=[{"AttributeName":"pk","AttributeType":"S"},{"AttributeName":"sk","AttributeType":"N"}],
    KeySchema=[{"AttributeName":"pk","KeyType":"HASH"},{"AttributeName":"sk","KeyType":"RANGE"}], BillingMode="PAY_PER_REQUEST",
    StreamSpecification={"StreamEnabled":True,"StreamViewType":"NEW_AND_OLD_IMAGES"})
ddb.get_waiter("table_exists").wait(TableName="legacy")
for i in range(5):
    ddb.put_item(TableName="legacy", Item={"pk":{"S":"a"},"sk":{"N":str(i)},"v":{"S":"x%d"%i}}, Expected={"pk":{"Exists":False}})
try:
    ddb.put_item(TableName="legacy", Item={"pk":{"S":"a"},"sk":{"N":"1"}}, Expected={"pk":{"Exists":False}})
    print("conditional put: NOT refused")
except ddb.exceptions.ConditionalCheckFailedException:
    print("conditional put refused: ConditionalCheckFailedException")
r = ddb.query(TableName="legacy", KeyConditions={"pk":{"AttributeValueList":[{"S":"a"}],"ComparisonOperator":"EQ"},"sk":{"AttributeValueList":[{"N":"1"},{"N":"3"}],"ComparisonOperator":"BETWEEN"}},
    QueryFilter={"v":{"AttributeValueList":[{"S":"x2"}],"ComparisonOperator":"NE"}}, AttributesToGet=["sk"])
print("query KeyConditions BETWEEN 1..3 minus v=x2:", [it["sk"]["N"] for it in r["Items"]])
r = ddb.scan(TableName="legacy", ScanFilter={"sk":{"AttributeValueList":[{"N":"0"},{"N":"4"}],"ComparisonOperator":"IN"}})
print("scan IN (0,4):", sorted(it["sk"]["N"] for it in r["Items"]))
r = ddb.update_item(TableName="legacy", Key={"pk":{"S":"a"},"sk":{"N":"0"}}, AttributeUpdates={"n":{"Action":"ADD","Value":{"N":"5"}},"v":{"Action":"DELETE"}}, ReturnValues="ALL_NEW")
print("update AttributeUpdates:", r["Attributes"])
res = boto3.resource("dynamodb", **kw).Table("legacy")
print("resource get_item:", res.get_item(Key={"pk":"a","sk":1})["Item"])
s = boto3.client("dynamodbstreams", **kw)
arn = ddb.describe_table(TableName="legacy")["Table"]["LatestStreamArn"]
shard = s.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
it = s.get_shard_iterator(StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
recs = s.get_records(ShardIterator=it)["Records"]
print("stream records:", [(x["eventName"], sorted(x["dynamodb"].get("NewImage",{}).keys())) for x in recs])

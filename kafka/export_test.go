package kafka

// BrokerID is brokerID, for tests outside the package.
var BrokerID = brokerID

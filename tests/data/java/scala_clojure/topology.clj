(ns com.example.topology
  (:import [org.apache.storm.kafka KafkaSpout SpoutConfig ZkHosts]))

(defn kafka-spout []
  (KafkaSpout. (SpoutConfig. (ZkHosts. "zk:2181") "words" "/words" "wc")))

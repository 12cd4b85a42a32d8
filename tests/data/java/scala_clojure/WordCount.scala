package com.example.wc

import org.apache.storm.kafka.{KafkaSpout, SpoutConfig, ZkHosts}
import org.apache.storm.topology.TopologyBuilder

object WordCount {
  def main(args: Array[String]): Unit = {
    val config = new SpoutConfig(new ZkHosts("zk:2181"), "words", "/words", "wc")
    val builder = new TopologyBuilder()
    builder.setSpout("words", new KafkaSpout(config), 2)
  }
}

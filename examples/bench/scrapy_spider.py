"""The Scrapy side of examples/crawl_bench.rs: follow every <a href> within the seeds' hosts,
obeying robots.txt, with 32 concurrent requests, for at most --seconds; print the pages and
bytes fetched as JSON. Requests go through the bench's server as an HTTP proxy, which serves
every virtual host.

Usage: http_proxy=PROXY_URL python scrapy_spider.py SEEDS_FILE SECONDS
"""
import json
import os
import sys
from urllib.parse import urlsplit

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.linkextractors import LinkExtractor

seeds_file, seconds = sys.argv[1], int(sys.argv[2])
seeds = [line.strip() for line in open(seeds_file) if line.strip()]
stats = {"pages": 0, "bytes": 0}


class Bench(scrapy.Spider):
    name = "bench"
    allowed_domains = sorted({urlsplit(s).hostname for s in seeds})
    links = LinkExtractor()

    start_urls = seeds

    def parse(self, response):
        stats["pages"] += 1
        stats["bytes"] += len(response.body)
        for link in self.links.extract_links(response):
            yield scrapy.Request(link.url)


process = CrawlerProcess(
    settings={
        "LOG_LEVEL": os.environ.get("SCRAPY_LOG_LEVEL", "ERROR"),
        "ROBOTSTXT_OBEY": True,
        "CONCURRENT_REQUESTS": 32,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
        "DOWNLOAD_DELAY": 0,
        "CLOSESPIDER_TIMEOUT": seconds,
        "TELNETCONSOLE_ENABLED": False,
        "HTTPCACHE_ENABLED": False,
        "COOKIES_ENABLED": False,
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
    }
)
process.crawl(Bench)
process.start()
print(json.dumps(stats))

"""One small source file per table-driven language (Rust, C, C++, C#, Kotlin, Swift,
Ruby, PHP, Scala, Lua, Elixir, Haskell, Bash, Zig), written as each language's own
code would be: a documented function that parses a Retry-After header, a caller of
it, and two unrelated functions (an avatar renderer, a log compressor) that a search
must not prefer.

``SAMPLES[lang] = (path, source, target symbol, caller symbol)``.
"""

SAMPLES: dict[str, tuple[str, str, str, str]] = {
    "rust": ("src/retry.rs", '''use std::time::Duration;

/// Parse the Retry-After header into the number of seconds to wait before retrying.
pub fn parse_retry_after(value: &str) -> Option<u64> {
    value.trim().parse::<u64>().ok()
}

pub struct Scheduler { delay: Duration }

impl Scheduler {
    /// Schedule the next attempt of a failed request.
    pub fn schedule_retry(&mut self, header: &str) {
        let secs = parse_retry_after(header).unwrap_or(1);
        self.delay = Duration::from_secs(secs);
    }
}

/// Render the user's avatar as an HTML image tag.
pub fn render_avatar(url: &str) -> String { format!("<img src={}>", url) }

/// Compress a log file with gzip.
pub fn gzip_log(path: &str) -> bool { !path.is_empty() }
''', "parse_retry_after", "Scheduler.schedule_retry"),
    "c": ("lib/retry.c", '''#include <stdlib.h>

/* Parse the Retry-After header into the number of seconds to wait before retrying. */
long parse_retry_after(const char *value) {
    return strtol(value, NULL, 10);
}

/* Schedule the next attempt of a failed request. */
void schedule_retry(struct conn *c, const char *header) {
    c->delay = parse_retry_after(header);
}

/* Render the user's avatar as an HTML image tag. */
int render_avatar(char *out, const char *url) { return sprintf(out, "<img src=%s>", url); }

/* Compress a log file with gzip. */
int gzip_log(const char *path) { return path != NULL; }
''', "parse_retry_after", "schedule_retry"),
    "cpp": ("src/retry.cpp", '''#include <string>

namespace net {
/// Parses HTTP headers of responses.
class HeaderParser {
 public:
  /// Parse the Retry-After header into the number of seconds to wait before retrying.
  long parseRetryAfter(const std::string& value) { return std::stol(value); }
};

/// Schedule the next attempt of a failed request.
void scheduleRetry(Conn& c, const std::string& header) {
  HeaderParser p;
  c.delay = p.parseRetryAfter(header);
}

/// Render the user's avatar as an HTML image tag.
std::string renderAvatar(const std::string& url) { return "<img src=" + url + ">"; }

/// Compress a log file with gzip.
bool gzipLog(const std::string& path) { return !path.empty(); }
}
''', "HeaderParser.parseRetryAfter", "scheduleRetry"),
    "csharp": ("src/Retry.cs", '''using System;

namespace Net.Http
{
    public class RetryPolicy
    {
        /// <summary>Parse the Retry-After header into the number of seconds to wait before retrying.</summary>
        public int ParseRetryAfter(string value) { return int.Parse(value.Trim()); }

        /// <summary>Schedule the next attempt of a failed request.</summary>
        public void ScheduleRetry(Request r, string header) { r.Delay = ParseRetryAfter(header); }
    }

    public static class Html
    {
        /// <summary>Render the user's avatar as an HTML image tag.</summary>
        public static string RenderAvatar(string url) { return "<img src=" + url + ">"; }

        /// <summary>Compress a log file with gzip.</summary>
        public static bool GzipLog(string path) { return path.Length > 0; }
    }
}
''', "RetryPolicy.ParseRetryAfter", "RetryPolicy.ScheduleRetry"),
    "kotlin": ("src/main/kotlin/Retry.kt", '''package net.http

import kotlin.math.max

class RetryPolicy {
    /** Parse the Retry-After header into the number of seconds to wait before retrying. */
    fun parseRetryAfter(value: String): Long = value.trim().toLong()

    /** Schedule the next attempt of a failed request. */
    fun scheduleRetry(request: Request, header: String) {
        request.delay = max(1L, parseRetryAfter(header))
    }
}

/** Render the user's avatar as an HTML image tag. */
fun renderAvatar(url: String): String = "<img src=$url>"

/** Compress a log file with gzip. */
fun gzipLog(path: String): Boolean = path.isNotEmpty()
''', "RetryPolicy.parseRetryAfter", "RetryPolicy.scheduleRetry"),
    "swift": ("Sources/Retry.swift", '''import Foundation

/// Parse the Retry-After header into the number of seconds to wait before retrying.
func parseRetryAfter(_ value: String) -> Int? {
    return Int(value.trimmingCharacters(in: .whitespaces))
}

final class Scheduler {
    var delay = 0
    /// Schedule the next attempt of a failed request.
    func scheduleRetry(header: String) {
        delay = parseRetryAfter(header) ?? 1
    }
}

/// Render the user's avatar as an HTML image tag.
func renderAvatar(url: String) -> String { return "<img src=\\(url)>" }

/// Compress a log file with gzip.
func gzipLog(path: String) -> Bool { return !path.isEmpty }
''', "parseRetryAfter", "Scheduler.scheduleRetry"),
    "ruby": ("lib/net/retry.rb", '''require "time"

module Net
  class RetryPolicy
    # Parse the Retry-After header into the number of seconds to wait before retrying.
    def parse_retry_after(value)
      Integer(value.strip)
    end

    # Schedule the next attempt of a failed request.
    def schedule_retry(request, header)
      request.delay = parse_retry_after(header)
    end
  end

  # Render the user's avatar as an HTML image tag.
  def self.render_avatar(url)
    "<img src=#{url}>"
  end

  # Compress a log file with gzip.
  def self.gzip_log(path)
    !path.empty?
  end
end
''', "Net.RetryPolicy.parse_retry_after", "Net.RetryPolicy.schedule_retry"),
    "php": ("src/RetryPolicy.php", '''<?php
namespace Net\\Http;

class RetryPolicy
{
    /** Parse the Retry-After header into the number of seconds to wait before retrying. */
    public function parseRetryAfter(string $value): int
    {
        return (int) trim($value);
    }

    /** Schedule the next attempt of a failed request. */
    public function scheduleRetry(Request $request, string $header): void
    {
        $request->delay = $this->parseRetryAfter($header);
    }
}

/** Render the user's avatar as an HTML image tag. */
function render_avatar(string $url): string { return "<img src=$url>"; }

/** Compress a log file with gzip. */
function gzip_log(string $path): bool { return $path !== ""; }
''', "RetryPolicy.parseRetryAfter", "RetryPolicy.scheduleRetry"),
    "scala": ("src/main/scala/Retry.scala", '''package net.http

import scala.util.Try

object RetryPolicy {
  /** Parse the Retry-After header into the number of seconds to wait before retrying. */
  def parseRetryAfter(value: String): Option[Long] = Try(value.trim.toLong).toOption

  /** Schedule the next attempt of a failed request. */
  def scheduleRetry(request: Request, header: String): Unit =
    request.delay = parseRetryAfter(header).getOrElse(1L)
}

object Html {
  /** Render the user's avatar as an HTML image tag. */
  def renderAvatar(url: String): String = s"<img src=$url>"

  /** Compress a log file with gzip. */
  def gzipLog(path: String): Boolean = path.nonEmpty
}
''', "RetryPolicy.parseRetryAfter", "RetryPolicy.scheduleRetry"),
    "lua": ("lua/net/retry.lua", '''local M = {}

--- Parse the Retry-After header into the number of seconds to wait before retrying.
function M.parse_retry_after(value)
  return tonumber(vim.trim(value))
end

--- Schedule the next attempt of a failed request.
function M.schedule_retry(request, header)
  request.delay = M.parse_retry_after(header) or 1
end

--- Render the user's avatar as an HTML image tag.
function M.render_avatar(url)
  return "<img src=" .. url .. ">"
end

--- Compress a log file with gzip.
function M.gzip_log(path)
  return path ~= ""
end

return M
''', "M.parse_retry_after", "M.schedule_retry"),
    "elixir": ("lib/net/retry.ex", '''defmodule Net.Retry do
  @moduledoc "Retries of failed requests."

  @doc "Parse the Retry-After header into the number of seconds to wait before retrying."
  def parse_retry_after(value) do
    value |> String.trim() |> String.to_integer()
  end

  @doc "Schedule the next attempt of a failed request."
  def schedule_retry(request, header) do
    %{request | delay: parse_retry_after(header)}
  end

  @doc "Render the user's avatar as an HTML image tag."
  def render_avatar(url), do: "<img src=#{url}>"

  @doc "Compress a log file with gzip."
  def gzip_log(path), do: path != ""
end
''', "Net.Retry.parse_retry_after", "Net.Retry.schedule_retry"),
    "haskell": ("src/Net/Retry.hs", '''module Net.Retry where

import Data.Char (isSpace)

-- | Parse the Retry-After header into the number of seconds to wait before retrying.
parseRetryAfter :: String -> Int
parseRetryAfter value = read (filter (not . isSpace) value)

-- | Schedule the next attempt of a failed request.
scheduleRetry :: Request -> String -> Request
scheduleRetry request header = request { delay = parseRetryAfter header }

-- | Render the user's avatar as an HTML image tag.
renderAvatar :: String -> String
renderAvatar url = "<img src=" ++ url ++ ">"

-- | Compress a log file with gzip.
gzipLog :: FilePath -> Bool
gzipLog path = not (null path)
''', "parseRetryAfter", "scheduleRetry"),
    "bash": ("lib/retry.sh", '''#!/usr/bin/env bash
set -euo pipefail

# Parse the Retry-After header into the number of seconds to wait before retrying.
parse_retry_after() {
  local value="$1"
  echo "${value//[[:space:]]/}"
}

# Schedule the next attempt of a failed request.
schedule_retry() {
  local delay
  delay="$(parse_retry_after "$1")"
  sleep "$delay"
}

# Render the user's avatar as an HTML image tag.
render_avatar() {
  printf '<img src=%s>' "$1"
}

# Compress a log file with gzip.
gzip_log() {
  gzip -9 "$1"
}
''', "parse_retry_after", "schedule_retry"),
    "zig": ("src/retry.zig", '''const std = @import("std");

/// Parse the Retry-After header into the number of seconds to wait before retrying.
pub fn parseRetryAfter(value: []const u8) !u64 {
    return std.fmt.parseInt(u64, std.mem.trim(u8, value, " "), 10);
}

pub const Scheduler = struct {
    delay: u64 = 0,

    /// Schedule the next attempt of a failed request.
    pub fn scheduleRetry(self: *Scheduler, header: []const u8) void {
        self.delay = parseRetryAfter(header) catch 1;
    }
};

/// Render the user's avatar as an HTML image tag.
pub fn renderAvatar(out: []u8, url: []const u8) ![]u8 {
    return std.fmt.bufPrint(out, "<img src={s}>", .{url});
}

/// Compress a log file with gzip.
pub fn gzipLog(path: []const u8) bool {
    return path.len > 0;
}
''', "parseRetryAfter", "Scheduler.scheduleRetry"),
}

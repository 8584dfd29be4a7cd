#!/usr/bin/env bash
# Fails when a tracked file is an executable (ELF, Mach-O or PE magic) or
# larger than 1 MiB: built binaries and bulky data ship in every module
# zip and every clone. Runs from anywhere inside the repository.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"

git ls-files -z | perl -0 -ne '
  BEGIN { $max = 1024 * 1024; $bad = 0; $n = 0 }
  chomp; $f = $_; $n++;
  next unless -f $f;
  $size = -s $f;
  if ($size > $max) {
    print STDERR "check-tree: $f is $size bytes, over the 1 MiB limit for tracked files\n"; $bad = 1;
  }
  open(my $fh, "<:raw", $f) or die "check-tree: $f: $!\n";
  read($fh, $m, 4); close($fh);
  $kind = "";
  $kind = "an ELF executable" if $m eq "\x7fELF";
  $kind = "a Mach-O executable" if grep { $m eq $_ } ("\xfe\xed\xfa\xce", "\xfe\xed\xfa\xcf", "\xce\xfa\xed\xfe", "\xcf\xfa\xed\xfe", "\xca\xfe\xba\xbe", "\xbe\xba\xfe\xca");
  $kind = "a PE (Windows) executable" if substr($m, 0, 2) eq "MZ";
  if ($kind) {
    print STDERR "check-tree: $f is $kind; build outputs must not be committed (see .gitignore)\n"; $bad = 1;
  }
  END {
    exit 1 if $bad;
    print "check-tree: $n tracked files, no executable, none over 1 MiB\n";
  }
'

"""Multi-cluster sites, the pure half: what a
site publishes and the board clients read (``bulletin``), observational
site choice by clients (``observational``), a meta-scheduler and a
hierarchy of them (``meta``), sender-initiated peer-to-peer load sharing
(``p2p``), load-imbalance metrics (``imbalance``), and a FIFO stand-in for a
site's internal architecture in pure tests (``site``). See NOTES.md."""

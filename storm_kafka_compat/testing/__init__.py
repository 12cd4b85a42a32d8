"""Test doubles and embedded servers for users' and this project's tests."""

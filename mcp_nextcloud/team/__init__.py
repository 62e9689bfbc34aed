"""The team server: one `serve --http --public-url` for many people, each acting as themselves.

It is its own OAuth 2.1 authorization server (store.py, provider.py), signs people in through Nextcloud's
Login Flow v2 (login.py), keeps each person's app password encrypted (vault.py), and runs each person's calls
through that person's own index service (people.py). app.py puts them together for serve.
"""
